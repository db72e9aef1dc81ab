import { createRoute, z } from "@hono/zod-openapi";
import { int64Id, pathId } from "../../lib/ids";
import { bearerSecurity, errorResponses, jsonContent } from "../../lib/openapi";
import { requireAuth } from "../../middleware/auth";

/*
 * The operator's signing configuration of a provider token (docs/providers.md,
 * "Signed requests"): with one set, the token answers only requests its
 * provider signed.
 */

const tags = ["Platform admin"];
const requireAdmin = requireAuth({ scope: "platform:admin" });
const NEEDS = "Needs a service token with scope `platform:admin` (the operator; `npm run admin`). ";

const params = z.object({ token_id: pathId("token_id", "The provider token's id (`npm run token -- list`)") });

export const ProviderSigningSchema = z
  .discriminatedUnion("kind", [
    z
      .object({
        kind: z.literal("twilio"),
        auth_token: z
          .string()
          .trim()
          .min(16)
          .max(128)
          .openapi({ description: "The Twilio account's auth token (the HMAC key of `X-Twilio-Signature`)" }),
      })
      .strict(),
    z
      .object({
        kind: z.literal("telnyx"),
        public_key: z.string().trim().min(40).max(64).openapi({
          description: "The Telnyx account's public key (Ed25519, base64, as the portal shows it)",
          example: "Xr0aHv0lC3Xtu8J1a4Kk8CqGbrt0S6K7J0FuM5qgq6k=",
        }),
      })
      .strict(),
  ])
  .openapi("ProviderSigningInput");

const SigningStateSchema = z
  .object({
    token_id: int64Id().openapi({ example: 4 }),
    kind: z
      .enum(["twilio", "telnyx"])
      .nullable()
      .openapi({ description: "Whose signatures the token requires; null: none (the secret is never shown)" }),
  })
  .openapi("ProviderSigningState");

export const putProviderSigning = createRoute({
  operationId: "adminPutProviderSigning",
  method: "put",
  path: "/internal/providers/{token_id}/signing",
  tags,
  summary: "Require the provider's signature on a provider token's requests",
  description:
    NEEDS +
    "Twilio (`auth_token`: `X-Twilio-Signature`, HMAC-SHA1) or Telnyx (`public_key`: `telnyx-signature-ed25519` " +
    "over `telnyx-timestamp|body`, within 5 minutes). From then on (within 60 s everywhere) a trust-lookup or " +
    "call-lookup with this token that is not signed so answers 403 and records nothing. Replaces any earlier " +
    "configuration; the answer never shows the secret.",
  security: bearerSecurity,
  middleware: [requireAdmin] as const,
  request: {
    params,
    body: { required: true, content: { "application/json": { schema: ProviderSigningSchema } } },
  },
  responses: {
    200: jsonContent(SigningStateSchema, "The token's signing state"),
    ...errorResponses(400, 401, 403, 404, 413, 429),
  },
});

export const deleteProviderSigning = createRoute({
  operationId: "adminDeleteProviderSigning",
  method: "delete",
  path: "/internal/providers/{token_id}/signing",
  tags,
  summary: "Stop requiring signatures on a provider token",
  description: NEEDS + "Clears the configuration: the token answers unsigned requests again (within 60 s everywhere).",
  security: bearerSecurity,
  middleware: [requireAdmin] as const,
  request: { params },
  responses: {
    200: jsonContent(SigningStateSchema, "The token's signing state (`kind`: null)"),
    ...errorResponses(400, 401, 403, 404, 429),
  },
});
