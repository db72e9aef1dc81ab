import { z } from "@hono/zod-openapi";

/**
 * zod's email rule (`z.regexes.email`) with host labels as DNS has them
 * (RFC 1035): a label neither starts nor ends with `-`. zod's own rule lets a
 * label end with one (`dana@acme-.example`), which no mail host has and JSON
 * Schema's `format: email` refuses (docs/decisions.md, "The document states
 * the rules").
 */
export const EMAIL_PATTERN =
  /^(?:[A-Za-z0-9_'+-]+\.)*[A-Za-z0-9_'+-]*[A-Za-z0-9_+-]@(?:[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?\.)+[A-Za-z]{2,}$/;

/**
 * An email address as the API stores it (docs/decisions.md): trimmed, lowercased,
 * at most 254 characters (RFC 5321), validated by `EMAIL_PATTERN` — a
 * stricter rule than RFC 5321's, which the document states as its pattern.
 */
export const EmailAddress = z
  .string()
  .trim()
  .toLowerCase()
  .pipe(z.email({ pattern: EMAIL_PATTERN, error: "must be an email address" }).max(254))
  .openapi({
    type: "string",
    format: "email",
    maxLength: 254,
    pattern: EMAIL_PATTERN.source,
    description:
      "Stricter than RFC 5321: dot-separated runs of ASCII letters, digits and `_'+-` before the `@`, host " +
      "labels of letters, digits and `-` (not first or last) ending in a top-level domain of two or more " +
      "letters; no quoted local parts, IP literals or non-ASCII. Surrounding blanks are trimmed and the " +
      "address is lowercased",
    example: "dana@example.com",
  });
