import { z } from "@hono/zod-openapi";

/**
 * An email address as the API stores it (docs/decisions.md): trimmed, lowercased,
 * at most 254 characters (RFC 5321), validated by zod's email check — a
 * stricter rule than RFC 5321's, which the document states as a pattern.
 */
export const EmailAddress = z
  .string()
  .trim()
  .toLowerCase()
  .pipe(z.email({ error: "must be an email address" }).max(254))
  .openapi({
    type: "string",
    format: "email",
    maxLength: 254,
    pattern: z.regexes.email.source,
    description:
      "Stricter than RFC 5321: dot-separated runs of ASCII letters, digits and `_'+-` before the `@`, host " +
      "labels of letters, digits and `-` ending in a top-level domain of two or more letters; no quoted " +
      "local parts, IP literals or non-ASCII. Surrounding blanks are trimmed and the address is lowercased",
    example: "dana@example.com",
  });
