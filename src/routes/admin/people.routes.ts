import { createRoute, z } from "@hono/zod-openapi";
import { pathId } from "../../lib/ids";
import { bearerSecurity, errorResponses, jsonContent } from "../../lib/openapi";
import { queryInteger } from "../../lib/pagination";
import { INTERNATIONAL_PHONE_PATTERN } from "../../lib/phone";
import { requireAuth } from "../../middleware/auth";
import { developmentOnly } from "../../middleware/development-only";

/*
 * The operator's hand on people's phones, tokens and (in development) the messages codes went out as
 * (docs/security.md, "Proving a phone" and "Devices"; docs/app.md, "Signing in").
 */

const tags = ["Platform admin"];
const requireAdmin = requireAuth({ scope: "platform:admin" });
const NEEDS = "Needs a service token with scope `platform:admin` (the operator; `npm run admin`). ";

export const releasePhone = createRoute({
  operationId: "adminReleasePhone",
  method: "post",
  path: "/internal/phones/{e164}/release",
  tags,
  summary: "End every person's confirmation of a number",
  description:
    NEEDS +
    "For a number that changed hands outside the platform (recycled by its carrier, a SIM swap reported): whoever " +
    "had confirmed it keeps it on their record, unconfirmed, and their streams hear `phones`; the trust index " +
    "follows at once. Releasing a number nobody confirmed answers `released: 0`.",
  security: bearerSecurity,
  middleware: [requireAdmin] as const,
  request: {
    params: z.object({
      e164: z
        .string()
        .max(40)
        .openapi({
          param: { name: "e164", in: "path" },
          pattern: INTERNATIONAL_PHONE_PATTERN,
          example: "+14155550199",
          description: "The number, E.164 (a valid one, else 400)",
        }),
    }),
  },
  responses: {
    200: jsonContent(
      z
        .object({ released: z.number().int().openapi({ description: "Confirmations ended", example: 1 }) })
        .openapi("PhoneRelease"),
      "Released",
    ),
    ...errorResponses(400, 401, 403, 404, 429),
  },
});

export const revokeToken = createRoute({
  operationId: "adminRevokeToken",
  method: "post",
  path: "/internal/tokens/{id}/revoke",
  tags,
  summary: "Revoke any token",
  description:
    NEEDS +
    "What `npm run token -- revoke` calls: the token is revoked, its record everywhere rewritten, and a person's " +
    "open streams of it close with 4001 at once. An unknown or already revoked token → 404.",
  security: bearerSecurity,
  middleware: [requireAdmin] as const,
  request: { params: z.object({ id: pathId("id", "Token id (`npm run token -- list`)") }) },
  responses: {
    204: { description: "Revoked" },
    ...errorResponses(401, 403, 404, 429),
  },
});

const OutboxEntrySchema = z
  .object({
    to: z.string().openapi({ example: "bob@acme.example" }),
    channel: z.enum(["sms", "email"]),
    body: z.string().openapi({ example: "492817 is your verification code. It expires in 10 minutes." }),
    created_at: z.string().openapi({ format: "date-time" }),
  })
  .openapi("OutboxMessage");

export const readOutbox = createRoute({
  operationId: "adminReadOutbox",
  method: "get",
  path: "/internal/outbox",
  tags,
  summary: "The development outbox (development only)",
  description:
    NEEDS +
    "Where codes go when no SMS or email provider is configured under `npm run dev`: newest first, at most " +
    "`limit`; `to` keeps one address. Exists only when ENVIRONMENT is development (elsewhere 404).",
  security: bearerSecurity,
  middleware: [developmentOnly, requireAdmin] as const,
  request: {
    query: z.object({
      to: z
        .string()
        .max(254)
        .optional()
        .openapi({ param: { name: "to", in: "query" }, example: "bob@acme.example" }),
      limit: queryInteger(
        "limit",
        { min: 1, max: 100, fallback: 20 },
        "At most this many (default 20, at most 100)",
        20,
      ),
    }),
  },
  responses: {
    200: jsonContent(z.array(OutboxEntrySchema), "Messages, newest first"),
    ...errorResponses(400, 401, 403, 404, 429),
  },
});
