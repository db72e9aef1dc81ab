import { z } from "@hono/zod-openapi";
import { etag } from "hono/etag";

/**
 * Conditional reads (docs/decisions.md, "Conditional reads"): the answer's
 * `ETag` is a digest of its body (hono's etag middleware), so it changes
 * exactly when what the client would read changes; `If-None-Match` naming
 * it answers 304 without a body. The read still runs: a 304 saves the
 * client's bandwidth and parsing, not the server's queries.
 */
export const conditionalRead = etag();

/** The request header a conditional read declares (the middleware reads it; validators never see it). */
export const ConditionalHeaders = z.object({
  "If-None-Match": z.string().optional().openapi({
    description: "The `ETag` of the copy the client holds: 304 without a body while it is still current",
    example: '"3f2a9c0d1b7e4a6f8c5d2e1b0a9f8e7d6c5b4a39"',
  }),
});

const ETagHeader = z.object({
  ETag: z.string().openapi({
    description: "Digest of this answer's body; send it back in `If-None-Match`",
    example: '"3f2a9c0d1b7e4a6f8c5d2e1b0a9f8e7d6c5b4a39"',
  }),
});

/** A 200 of a conditional read: its own headers and `ETag`. */
export const withETag = <R extends { description: string; headers?: z.ZodObject<z.ZodRawShape> }>(response: R) => ({
  ...response,
  headers: response.headers ? response.headers.extend(ETagHeader.shape) : ETagHeader,
});

/** The 304 a conditional read may answer. */
export const notModified = {
  304: { description: "Not modified: `If-None-Match` names the current `ETag`; no body", headers: ETagHeader },
} as const;
