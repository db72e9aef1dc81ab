import { z } from "@hono/zod-openapi";

/**
 * An email address as the API stores it (docs/decisions.md): trimmed, lowercased,
 * at most 254 characters (RFC 5321), validated by zod's email check.
 */
export const EmailAddress = z
  .string()
  .trim()
  .toLowerCase()
  .pipe(z.email({ error: "must be an email address" }).max(254))
  .openapi({ type: "string", format: "email", example: "dana@example.com" });
