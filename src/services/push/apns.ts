import { PUSH_TTL_SECONDS, type PushEvent, type PushType } from "../../domain/push";
import { epochSeconds, importPkcs8, signJwt } from "../../lib/jwt";
import { singleFlight } from "../../lib/single-flight";
import { deadAddress, noAnswer, outcomeOf, SEND_TIMEOUT_MS, type ApnsTarget, type PushOutcome } from "./outcome";

/*
 * Apple Push Notification service, token-based (docs/app.md, "Push"): the
 * deployment's signing key (a `.p8` file, a Worker secret) signs an ES256
 * provider token (`kid` the key id, `iss` the team id, `iat`), kept in the
 * isolate and used for at most 50 minutes (Apple refuses one older than an
 * hour, and one renewed more often than every 20 minutes): pushes at the same
 * moment share one token's making, and a refused token is renewed only once
 * it is 20 minutes old. A push is a
 * visible alert with no text of ours: `loc-key` names a string the app
 * ships, `mutable-content` lets its notification service extension fetch
 * what arrived; beside `aps`, `{"type","id"}`.
 */

export const apnsUrl = (target: ApnsTarget) =>
  `https://${target.sandbox ? "api.sandbox.push.apple.com" : "api.push.apple.com"}/3/device/${target.token}`;

/** The deployment's APNs signing key (Worker secrets: src/secrets.d.ts). */
export type ApnsKey = { key: string; keyId: string; teamId: string };

/** The app's localizable string per type (its Localizable.strings defines the text). */
export const APNS_ALERT_KEYS: Record<PushType, string> = {
  chat: "PUSH_CHAT",
  trust_request: "PUSH_TRUST_REQUEST",
  missed_call: "PUSH_MISSED_CALL",
};

const PROVIDER_TOKEN_REUSE_MS = 50 * 60 * 1000;
/** Apple refuses a provider token renewed more often than this (TooManyProviderTokenUpdates). */
const PROVIDER_TOKEN_RENEW_MS = 20 * 60 * 1000;

/** Provider tokens by key, in this isolate, with when each was made. */
const providerTokens = new Map<string, { jwt: string; at: number }>();
/** Pushes that need a token at the same moment share its making (one token, not one each). */
const making = singleFlight<string | PushOutcome>();

/** Forgets the cached provider tokens (a test starting afresh). */
export const forgetApnsTokens = () => providerTokens.clear();

const cacheKeyOf = (apns: ApnsKey) => `${apns.teamId}.${apns.keyId}`;

function providerToken(apns: ApnsKey, now: number): Promise<string | PushOutcome> {
  const cached = providerTokens.get(cacheKeyOf(apns));
  if (cached && now - cached.at < PROVIDER_TOKEN_REUSE_MS) return Promise.resolve(cached.jwt);
  return making(cacheKeyOf(apns), async () => {
    let key: CryptoKey;
    try {
      key = await importPkcs8("ES256", apns.key);
    } catch {
      return { result: "skipped", reason: "APNS_KEY is not a P-256 PKCS #8 key (the .p8 file APNs gives)" };
    }
    const jwt = await signJwt("ES256", key, { iss: apns.teamId, iat: epochSeconds(now) }, { kid: apns.keyId });
    providerTokens.set(cacheKeyOf(apns), { jwt, at: now });
    return jwt;
  });
}

/** The JSON body of a push: an alert with the app's string for the type, and `{"type","id"}`. */
export const apnsPayload = (event: PushEvent) => ({
  aps: { alert: { "loc-key": APNS_ALERT_KEYS[event.type] }, "mutable-content": 1, sound: "default" },
  type: event.type,
  id: event.id,
});

/** The request headers of a push (its URL: `apnsUrl`). */
export const apnsHeaders = (target: ApnsTarget, event: PushEvent, jwt: string, now: number) => ({
  authorization: `bearer ${jwt}`,
  "apns-topic": target.topic,
  "apns-push-type": "alert",
  "apns-priority": "10",
  "apns-collapse-id": event.type,
  "apns-expiration": String(epochSeconds(now) + PUSH_TTL_SECONDS),
  "content-type": "application/json",
});

/** Sends `event` to an APNs device token: Apple's answer, as an outcome (outcome.ts). */
export async function sendApns(
  target: ApnsTarget,
  event: PushEvent,
  apns: ApnsKey,
  now = Date.now(),
): Promise<PushOutcome> {
  const jwt = await providerToken(apns, now);
  if (typeof jwt !== "string") return jwt;
  let response: Response;
  try {
    response = await fetch(apnsUrl(target), {
      method: "POST",
      headers: apnsHeaders(target, event, jwt, now),
      body: JSON.stringify(apnsPayload(event)),
      signal: AbortSignal.timeout(SEND_TIMEOUT_MS),
      redirect: "manual",
    });
  } catch (err) {
    return noAnswer(err);
  }
  const outcome = deadAddress(await outcomeOf(response));
  // ExpiredProviderToken, InvalidProviderToken: a new token on the next try, but never sooner than 20
  // minutes after the last one (Apple refuses renewals more often than that, for every push of the
  // team). A younger token refused is the deployment's key or ids: a new token would be refused too,
  // so the push is dropped and logged.
  if (response.status === 403 && outcome.result === "failed" && /ProviderToken/.test(outcome.reason)) {
    const cached = providerTokens.get(cacheKeyOf(apns));
    if (cached && now - cached.at < PROVIDER_TOKEN_RENEW_MS) return outcome;
    providerTokens.delete(cacheKeyOf(apns));
    return { ...outcome, result: "retry" };
  }
  return outcome;
}
