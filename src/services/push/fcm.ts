import { PUSH_TTL_SECONDS, type PushEvent } from "../../domain/push";
import { epochSeconds, importPkcs8, signJwt } from "../../lib/jwt";
import { singleFlight } from "../../lib/single-flight";
import { deadAddress, noAnswer, outcomeOf, SEND_TIMEOUT_MS, type FcmTarget, type PushOutcome } from "./outcome";

/*
 * Firebase Cloud Messaging, HTTP v1 API (docs/app.md, "Push"). The
 * deployment's service account (the JSON key Google gives, a Worker secret)
 * signs an RS256 JWT that Google's OAuth endpoint trades for an access token
 * (the JWT bearer grant, RFC 7523); the token is kept in the isolate until a
 * minute before it expires. A push is a data message: `{"type","id"}` as
 * strings, one collapse key per type, high priority.
 */

export const FCM_TOKEN_URL = "https://oauth2.googleapis.com/token";
export const FCM_SCOPE = "https://www.googleapis.com/auth/firebase.messaging";
export const fcmSendUrl = (projectId: string) =>
  `https://fcm.googleapis.com/v1/projects/${encodeURIComponent(projectId)}/messages:send`;

/** The fields of a service account's JSON key that are used. */
export type ServiceAccount = { project_id: string; client_email: string; private_key: string; private_key_id?: string };

/** The service account of `FCM_SERVICE_ACCOUNT`, or why it cannot be used. */
export function serviceAccountOf(json: string): ServiceAccount | string {
  let parsed: Partial<ServiceAccount>;
  try {
    parsed = JSON.parse(json) as Partial<ServiceAccount>;
  } catch {
    return "the Worker secret FCM_SERVICE_ACCOUNT is not JSON (it is the service account's key file, whole)";
  }
  for (const field of ["project_id", "client_email", "private_key"] as const) {
    if (typeof parsed[field] !== "string" || !parsed[field]) {
      return `the Worker secret FCM_SERVICE_ACCOUNT has no ${field} (it is the service account's key file, whole)`;
    }
  }
  return parsed as ServiceAccount;
}

/** Access tokens by service account, in this isolate, until a minute before they expire. */
const accessTokens = new Map<string, { token: string; until: number }>();

/** Forgets the cached access tokens (a test starting afresh; a 401 forgets its own). */
export const forgetFcmTokens = () => accessTokens.clear();

type Grant = { token: string } | { outcome: PushOutcome };

/** Pushes that need an access token at the same moment share one request for it. */
const granting = singleFlight<Grant>();

/** The access token for `account`: the cached one, or a new one from Google's token endpoint. */
function accessToken(account: ServiceAccount, now: number): Promise<Grant> {
  const cached = accessTokens.get(account.client_email);
  if (cached && cached.until > now) return Promise.resolve({ token: cached.token });
  return granting(account.client_email, () => grant(account, now));
}

async function grant(account: ServiceAccount, now: number): Promise<Grant> {
  let key: CryptoKey;
  try {
    key = await importPkcs8("RS256", account.private_key);
  } catch {
    return { outcome: { result: "skipped", reason: "FCM_SERVICE_ACCOUNT's private_key is not an RSA PKCS #8 key" } };
  }
  const iat = epochSeconds(now);
  const assertion = await signJwt(
    "RS256",
    key,
    { iss: account.client_email, scope: FCM_SCOPE, aud: FCM_TOKEN_URL, iat, exp: iat + 3600 },
    account.private_key_id ? { kid: account.private_key_id } : {},
  );
  let response: Response;
  try {
    response = await fetch(FCM_TOKEN_URL, {
      method: "POST",
      headers: { "Content-Type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ grant_type: "urn:ietf:params:oauth:grant-type:jwt-bearer", assertion }).toString(),
      signal: AbortSignal.timeout(SEND_TIMEOUT_MS),
      redirect: "manual",
    });
  } catch (err) {
    return { outcome: noAnswer(err) };
  }
  if (!response.ok) {
    const outcome = await outcomeOf(response);
    // A refused grant is the deployment's key, not the device: the registration stays.
    return { outcome: outcome.result === "gone" ? { ...outcome, result: "failed" } : outcome };
  }
  const body = (await response.json().catch(() => null)) as { access_token?: string; expires_in?: number } | null;
  if (!body?.access_token) return { outcome: { result: "retry", status: response.status, reason: "no access_token" } };
  const until = now + Math.max(0, (body.expires_in ?? 3600) - 60) * 1000;
  accessTokens.set(account.client_email, { token: body.access_token, until });
  return { token: body.access_token };
}

/** The body of `messages:send` for `event` to one registration token. */
export const fcmMessage = (target: FcmTarget, event: PushEvent) => ({
  message: {
    token: target.token,
    data: { type: event.type, id: String(event.id) },
    android: { collapse_key: event.type, priority: "high", ttl: `${PUSH_TTL_SECONDS}s` },
  },
});

/** Sends `event` to an FCM registration token: Google's answer, as an outcome (outcome.ts). */
export async function sendFcm(
  target: FcmTarget,
  event: PushEvent,
  account: ServiceAccount,
  now = Date.now(),
): Promise<PushOutcome> {
  const grant = await accessToken(account, now);
  if ("outcome" in grant) return grant.outcome;
  let response: Response;
  try {
    response = await fetch(fcmSendUrl(account.project_id), {
      method: "POST",
      headers: { Authorization: `Bearer ${grant.token}`, "Content-Type": "application/json" },
      body: JSON.stringify(fcmMessage(target, event)),
      signal: AbortSignal.timeout(SEND_TIMEOUT_MS),
      redirect: "manual",
    });
  } catch (err) {
    return noAnswer(err);
  }
  // The access token was refused (revoked, or expired early): the next try gets a new one.
  if (response.status === 401) {
    await response.body?.cancel();
    accessTokens.delete(account.client_email);
    return { result: "retry", status: 401, reason: "the access token was refused" };
  }
  return deadAddress(await outcomeOf(response));
}
