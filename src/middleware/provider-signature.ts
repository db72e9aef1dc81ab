import type { Context } from "hono";
import { createMiddleware } from "hono/factory";
import { forbidden, serviceUnavailable } from "../lib/errors";
import { logError } from "../lib/log";
import {
  formFields,
  isFormType,
  TELNYX_TOLERANCE_SECONDS,
  telnyxSignedBytes,
  twilioSignedFields,
  verifyTelnyx,
  verifyTwilio,
} from "../lib/provider-signatures";
import { signsBodyOnly } from "../domain/provider-signing";
import { signsFailedStirVerstat, verificationFieldNames } from "../domain/caller-verification";
import { callerVerificationOf } from "../services/caller-verification";
import { twilioAuthToken } from "../services/provider-secrets";
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
 * is recorded. The configuration came with the token's verification (cached
 * with it): no read of its own (a Twilio auth token is opened from the
 * sealed value it carries, services/provider-secrets.ts). Runs after
 * `requireAuth`.
 */
export const requireProviderSignature = createMiddleware<AppEnv>(async (c, next) => {
  const principal = c.var.principal;
  if (principal?.kind !== "service" || !principal.signing) return next();
  const { tokenId, signing } = principal;
  if (signing.kind === "twilio") await checkTwilio(c, await twilioAuthToken(c.var.deps, tokenId, signing));
  else await checkTelnyx(c, tokenId, signing.publicKey);
  await next();
});

const hasNoBody = (c: Context<AppEnv>) => c.req.method === "GET" || c.req.method === "HEAD";

async function checkTwilio(c: Context<AppEnv>, authToken: string) {
  const valid = await verifyTwilio(authToken, {
    url: c.req.url,
    contentType: c.req.header("Content-Type") ?? "",
    body: new Uint8Array(hasNoBody(c) ? [] : await c.req.arrayBuffer()),
    signature: c.req.header("X-Twilio-Signature"),
    basic: basicCredentials(c.req.header("Authorization")),
  });
  if (!valid)
    throw forbidden("this token answers only requests Twilio signed: X-Twilio-Signature is missing or does not match");
  if (hasNoBody(c) || !isFormType(c.req.header("Content-Type") ?? "")) return;
  const recut = recutForm(formFields(new Uint8Array(await c.req.arrayBuffer())));
  if (recut !== null) throw forbidden(recut);
}

/**
 * Twilio signs a form as its names and values run together (names sorted, no separators), so a captured
 * form can be cut again at other places with the same signature and drop a failed verification. Two
 * rules refuse those cuts (the sentence of the 403, or null):
 * - a verification field's name where Twilio never puts one: a name that is one shortened or lengthened
 *   at either end (`StirVerst=atTN-Validation-Failed-A`), or one inside a value (the field before
 *   swallowing it, `StirPassportToken=…StirVerstatTN-Validation-…`);
 * - a failed `StirVerstat` in the signed text that the fields do not read as failed, however it was
 *   cut: its value cut short (`StirVerstat=TN-Validation-Fai`), or its name split across a boundary
 *   (`StirPassportToken=…S`), the rest run into a name starting in lower case, which sorts after every
 *   name Twilio sends and so can take the form's last fields. The signed text is the same for every cut.
 * (A cut that runs the value on into the next field keeps reading as failed: domain/caller-verification.ts.)
 */
function recutForm(fields: Map<string, string[]>): string | null {
  for (const [name, values] of fields) {
    for (const field of verificationFieldNames) {
      const shifted =
        values.some((value) => value.includes(field)) ||
        (name !== field &&
          (field.startsWith(name) || name.startsWith(field) || field.endsWith(name) || name.endsWith(field)));
      if (shifted)
        return `the signed form's field \`${name}\` is not as Twilio sends it: it reads like a verification field cut elsewhere`;
    }
  }
  if (
    signsFailedStirVerstat(twilioSignedFields(fields)) &&
    callerVerificationOf(Object.fromEntries(fields)) !== "failed"
  )
    return "the signed form holds a failed caller verification that its fields do not read as one: it was cut elsewhere than Twilio cut it";
  return null;
}

/**
 * Telnyx: a POST only, signed, and used once. Telnyx signs the body and not
 * the URL, so a GET's signature (over `<timestamp>|`) would vouch for any
 * query string; and a signature stays valid for its 5 minutes, so each
 * signed request is claimed in the token's replay guard
 * (services/replay-guards.ts) and a second use is refused
 * (docs/security.md, "Provider signatures"). The guard is asked only once
 * the signature verified: a forgery costs no round trip.
 */
async function checkTelnyx(c: Context<AppEnv>, tokenId: number, publicKey: string) {
  if (hasNoBody(c))
    throw forbidden(
      "this token answers only POSTs Telnyx signed: Telnyx signs the body, not the URL, so a GET proves nothing; " +
        "send the webhook as a POST",
    );
  const body = new Uint8Array(await c.req.arrayBuffer());
  const timestamp = c.req.header("telnyx-timestamp");
  const valid = await verifyTelnyx(publicKey, {
    body,
    signature: c.req.header("telnyx-signature-ed25519"),
    timestamp,
    nowSeconds: Math.floor(Date.now() / 1000),
  });
  if (!valid)
    throw forbidden(
      "this token answers only requests Telnyx signed: telnyx-signature-ed25519 is missing or does not match, " +
        "or telnyx-timestamp is more than 5 minutes away",
    );
  // Remembered until its timestamp leaves the window, and a minute more for clocks that differ.
  const expiresAt = (Number(timestamp!.trim()) + TELNYX_TOLERANCE_SECONDS + 60) * 1000;
  const signed = telnyxSignedBytes(timestamp!, body);
  if (!(await firstUse(c, tokenId, signed, expiresAt)))
    throw forbidden(
      "this signed request was already answered: a Telnyx signature (telnyx-timestamp with its " +
        "telnyx-signature-ed25519) is accepted once, so a captured request cannot be sent again",
    );
}

/**
 * The replay guard's answer; when it cannot be had, 503 (never an answer
 * unchecked). Not retried: a first try that landed without its answer would
 * make the retry see the request as its own replay.
 */
async function firstUse(c: Context<AppEnv>, tokenId: number, signed: Uint8Array, expiresAt: number) {
  try {
    return await c.var.deps.replays.firstUse(tokenId, signed, expiresAt);
  } catch (err) {
    logError("the replay guard did not answer", err, { tokenId });
    throw serviceUnavailable(
      "the check that this signed request is not a replay could not be made; the provider's fallback applies",
    );
  }
}
