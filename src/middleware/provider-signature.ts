import { createMiddleware } from "hono/factory";
import { forbidden } from "../lib/errors";
import { verifyTelnyx, verifyTwilio } from "../lib/provider-signatures";
import { signsBodyOnly } from "../domain/provider-signing";
import type { AppEnv, Principal } from "../types";

const BASIC = /^Basic[ ]+([A-Za-z0-9+/]+={0,2})\s*$/i;

/** The user and password of a Basic Authorization header (Twilio may have signed them in the URL). */
function basicCredentials(header: string | undefined): { user: string; password: string } | null {
  const encoded = header ? BASIC.exec(header)?.[1] : undefined;
  if (!encoded) return null;
  try {
    const decoded = atob(encoded);
    const colon = decoded.indexOf(":");
    return colon === -1 ? null : { user: decoded.slice(0, colon), password: decoded.slice(colon + 1) };
  } catch {
    return null;
  }
}

/**
 * Whether this request's question is its signed body alone (a Telnyx-signed
 * token, `signsBodyOnly`): the handler then reads no field from the query
 * string, which Telnyx does not sign.
 */
export const readsSignedBodyOnly = (principal: Principal | null) =>
  principal?.kind === "service" && signsBodyOnly(principal.signing);

/**
 * A provider token with a signing configuration answers only requests its
 * provider signed (docs/providers.md, "Signed requests"): Twilio's
 * `X-Twilio-Signature` or Telnyx's `telnyx-signature-ed25519` with
 * `telnyx-timestamp`. Anything else is 403 before the handler runs, so nothing
 * is recorded. A Telnyx-signed token takes only requests with a body: Telnyx
 * signs the body and not the URL, so a GET's signature (over `<timestamp>|`)
 * would vouch for any query string (docs/security.md, "Provider signatures").
 * The configuration came with the token's verification (cached with it): no
 * read of its own. Runs after `requireAuth`.
 */
export const requireProviderSignature = createMiddleware<AppEnv>(async (c, next) => {
  const principal = c.var.principal;
  const signing = principal?.kind === "service" ? principal.signing : undefined;
  if (!signing) return next();
  if (signsBodyOnly(signing) && (c.req.method === "GET" || c.req.method === "HEAD"))
    throw forbidden(
      "this token answers only POSTs Telnyx signed: Telnyx signs the body, not the URL, so a GET proves nothing; " +
        "send the webhook as a POST",
    );
  const body = new Uint8Array(c.req.method === "GET" || c.req.method === "HEAD" ? [] : await c.req.arrayBuffer());
  const valid =
    signing.kind === "twilio"
      ? await verifyTwilio(signing.authToken, {
          url: c.req.url,
          contentType: c.req.header("Content-Type") ?? "",
          body,
          signature: c.req.header("X-Twilio-Signature"),
          basic: basicCredentials(c.req.header("Authorization")),
        })
      : await verifyTelnyx(signing.publicKey, {
          body,
          signature: c.req.header("telnyx-signature-ed25519"),
          timestamp: c.req.header("telnyx-timestamp"),
          nowSeconds: Math.floor(Date.now() / 1000),
        });
  if (!valid) {
    throw forbidden(
      signing.kind === "twilio"
        ? "this token answers only requests Twilio signed: X-Twilio-Signature is missing or does not match"
        : "this token answers only requests Telnyx signed: telnyx-signature-ed25519 is missing or does not match, " +
            "or telnyx-timestamp is more than 5 minutes away",
    );
  }
  await next();
});
