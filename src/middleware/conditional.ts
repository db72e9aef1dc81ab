import { z } from "@hono/zod-openapi";
import { createMiddleware } from "hono/factory";
import type { AppEnv } from "../types";

/** hono's etag middleware digests a body in pieces of this size, each with the digest of those before. */
const DIGEST_CHUNK = 262_144;

/**
 * The `ETag` of `body`, the value hono's etag middleware gives it: the SHA-1 (hex) of its bytes, or,
 * past 256 KiB, of each 256 KiB piece after the digest of the pieces before; null for no bytes.
 */
export async function bodyETag(body: ArrayBuffer): Promise<string | null> {
  const bytes = new Uint8Array(body);
  let digest: Uint8Array | null = null;
  for (let offset = 0; offset < bytes.byteLength; offset += DIGEST_CHUNK) {
    const piece = bytes.subarray(offset, offset + DIGEST_CHUNK);
    let input = piece;
    if (digest !== null) {
      input = new Uint8Array(digest.byteLength + piece.byteLength);
      input.set(digest, 0);
      input.set(piece, digest.byteLength);
    }
    digest = new Uint8Array(await crypto.subtle.digest("SHA-1", input));
  }
  return digest && `"${Array.from(digest, (byte) => byte.toString(16).padStart(2, "0")).join("")}"`;
}

/** The headers of a page that the client reads with its body (lib/pagination.ts): its tag covers them too. */
const PAGE_HEADERS = ["X-Total-Count", "Link"] as const;

/**
 * The `ETag` of an answer: its body's (`bodyETag`), or, for a page, the digest of its body's tag and
 * its `X-Total-Count` and `Link`, so a page whose items stayed while the list around it grew or
 * shrank is not a 304 (the client would keep the old total and the old last page).
 */
async function answerETag(body: ArrayBuffer, headers: Headers): Promise<string | null> {
  const tag = await bodyETag(body);
  const page = PAGE_HEADERS.map((name) => headers.get(name));
  if (tag === null || page.every((value) => value === null)) return tag;
  return bodyETag(new TextEncoder().encode(JSON.stringify([tag, ...page])).buffer as ArrayBuffer);
}

/** hono's `etagMatches`: `*`, or a tag of `If-None-Match` equal to `tag` without its weak mark. */
const matches = (tag: string, ifNoneMatch: string | null) =>
  ifNoneMatch === "*" || (ifNoneMatch?.match(/"[^"]*"/g)?.some((named) => named === tag.replace(/^W\//, "")) ?? false);

/** The headers a 304 keeps (hono's etag middleware's list; RFC 9110 §15.4.5 names them). */
const RETAINED_304_HEADERS = new Set(["cache-control", "content-location", "date", "etag", "expires", "vary"]);

/**
 * Conditional reads (docs/decisions.md, "Conditional reads"): the answer's
 * `ETag` is a digest of its body (the digest hono's etag middleware makes,
 * `bodyETag`), and of a page's `X-Total-Count` and `Link` (`answerETag`),
 * so it changes exactly when what the client would read changes; `If-None-Match` naming it answers 304 without a body. The read
 * still runs: a 304 saves the client's bandwidth and parsing, not the
 * server's queries. hono's middleware, which this replaces answer for
 * answer, tees the response's stream and reads the copy piece by piece;
 * here the body is read once and answered again from its bytes (a page of
 * 100 contacts spent about a tenth of its Worker time in the tee;
 * docs/performance.md).
 */
export const conditionalRead = createMiddleware<AppEnv>(async (c, next) => {
  const ifNoneMatch = c.req.header("If-None-Match") ?? null;
  await next();
  if (!(c.req.method === "GET" || c.req.method === "HEAD") || !c.res.ok) return;
  const res = c.res;
  let tag = res.headers.get("ETag");
  let body: ArrayBuffer | null = null;
  if (!tag) {
    if (res.body === null) return;
    body = await res.arrayBuffer();
    tag = await answerETag(body, res.headers);
    if (tag === null) {
      c.res = new Response(body, res);
      return;
    }
  }
  if (matches(tag, ifNoneMatch)) {
    if (body === null) await res.body?.cancel();
    c.res = new Response(null, { status: 304, statusText: "Not Modified", headers: { ETag: tag } });
    // Setting `c.res` carried the answer's headers over: only those a 304 keeps stay.
    for (const name of [...c.res.headers.keys()]) if (!RETAINED_304_HEADERS.has(name)) c.res.headers.delete(name);
    return;
  }
  if (body !== null) c.res = new Response(body, res);
  c.res.headers.set("ETag", tag);
});

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
