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
        public_key: z
          .string()
          .trim()
          .min(40)
          .max(64)
          .openapi({
            description:
              "The Telnyx account's public key as the portal shows it: the 32-byte Ed25519 key in base64, 44 " +
              "characters with its `=` padding (43 without; the URL-safe alphabet is accepted too, surrounding " +
              "blanks are trimmed). Any other length is 400",
            // telnyxKey (src/lib/provider-signatures.ts): 43 base64 digits are 258 bits, 32 bytes and 2 spare bits.
            pattern: String.raw`^\s*[A-Za-z0-9+/_-]{43}=?\s*$`,
            minLength: 43,
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
    ...errorResponses(400, 401, 403, 404, 413, 429, 503),
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

const ResealedSchema = z
  .object({
    key_id: z
      .string()
      .nullable()
      .openapi({ description: "The key id every auth token is now sealed under (the first of PROVIDER_SECRET_KEYS)" }),
    resealed: z
      .number()
      .int()
      .openapi({ description: "Auth tokens sealed again: stored in clear by an older version, or under an older key" }),
    unopened: z
      .number()
      .int()
      .openapi({
        description:
          "Auth tokens whose sealed value cannot be opened, left as they are and never holding up the rest: sealed " +
          "under a key PROVIDER_SECRET_KEYS no longer lists (list that key again, after the new one, and rotate once " +
          "more), or not opening under the key their id names",
      }),
    remaining: z.boolean().openapi({ description: "More are due than one call takes: call again" }),
  })
  .openapi("ProviderKeysRotation");

export const rotateProviderKeys = createRoute({
  operationId: "adminRotateProviderKeys",
  method: "post",
  path: "/internal/provider-keys/rotate",
  tags,
  summary: "Seal every stored provider secret under the first key of PROVIDER_SECRET_KEYS",
  description:
    NEEDS +
    "Twilio auth tokens are stored sealed (AES-GCM) under the Worker secret `PROVIDER_SECRET_KEYS`. After a new " +
    "key is put first in it, this seals again every auth token not sealed under that key (and any an older " +
    "version stored in clear), and rewrites the tokens' cached records. The minute cron does the same, 100 " +
    "tokens a minute; this seals up to 500 now (`remaining`: call again). The older key may leave the secret once `remaining` is false " +
    "and `unopened` is 0. 503 when the secret is not set.",
  security: bearerSecurity,
  middleware: [requireAdmin] as const,
  responses: {
    200: jsonContent(ResealedSchema, "What was sealed again"),
    ...errorResponses(401, 403, 429, 503),
  },
});
