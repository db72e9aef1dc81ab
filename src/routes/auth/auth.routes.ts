import { createRoute } from "@hono/zod-openapi";
import { errorResponses, jsonContent, noSecurity } from "../../lib/openapi";
import { CodeRequestSchema, CodeSentSchema, SignedInSchema, SignInSchema } from "./auth.schemas";

const tags = ["Me"];

export const requestCode = createRoute({
  method: "post",
  operationId: "requestSignInCode",
  path: "/auth/codes",
  tags,
  summary: "Send a sign-in code to an email or a phone",
  description:
    "Sends a 6-digit code, valid 10 minutes, when the address identifies exactly one person the platform knows " +
    "(an email, or a phone that person confirmed or alone holds). The answer is the same, in about the same " +
    "time, whether or not a code was sent. At most 5 codes an hour to one address and 20 an hour from one " +
    "client (429 with Retry-After); SMS go only to the deployment's countries (400 otherwise). A deployment " +
    "without its CODE_KEY secret answers every request 503. A message that cannot be sent is logged, never " +
    "answered (the answer does not wait for it). No token needed.",
  security: noSecurity,
  request: { body: { required: true, content: { "application/json": { schema: CodeRequestSchema } } } },
  responses: {
    202: jsonContent(CodeSentSchema, "Asked for; a code was sent if the address reaches a person"),
    ...errorResponses(400, 413, 429, 503),
  },
});

export const signIn = createRoute({
  method: "post",
  operationId: "signIn",
  path: "/auth/tokens",
  tags,
  summary: "Sign in with a code: a token for this device",
  description:
    "Spends the address's newest code and answers a new person token for one device, shown once (keep it; " +
    "`GET /me/devices` lists it, `DELETE /me/devices/{id}` revokes it). Signing in by phone also confirms that " +
    "phone as the person's own, ending anyone else's confirmation of it. A wrong, spent or expired code → 400 " +
    "`invalid or expired code`, the same whether or not the address belongs to anyone; 5 wrong tries void a code. " +
    "Without the deployment's CODE_KEY secret, 503.",
  security: noSecurity,
  request: { body: { required: true, content: { "application/json": { schema: SignInSchema } } } },
  responses: {
    201: jsonContent(SignedInSchema, "Signed in"),
    ...errorResponses(400, 413, 429, 503),
  },
});
