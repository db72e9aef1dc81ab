import type { PushTarget } from "../../domain/push";
import { loggableError } from "../../lib/errors";

/*
 * What became of one push (docs/app.md, "Push"), the same for the three
 * kinds: sent; gone (404 or 410, or a refusal naming the address itself as
 * dead, `deadAddress`: the push service no longer knows the device, its
 * registration is removed); retry (429, a 5xx, no answer: the
 * queue retries with backoff); failed (any other refusal: dropped and
 * logged); skipped (the deployment lacks a secret that kind needs, or the
 * endpoint is one the service may not reach).
 */

export type WebPushTarget = Extract<PushTarget, { kind: "webpush" }>;
export type FcmTarget = Extract<PushTarget, { kind: "fcm" }>;
export type ApnsTarget = Extract<PushTarget, { kind: "apns" }>;

export type PushOutcome =
  | { result: "sent"; status: number }
  | { result: "gone"; status: number; reason: string }
  | { result: "retry"; status: number | null; reason: string }
  | { result: "failed"; status: number; reason: string }
  | { result: "skipped"; reason: string };

/** How long one request to a push service (or Google's token endpoint) may take. */
export const SEND_TIMEOUT_MS = 10_000;

/** The start of a refusal's body, for the log (push services answer error codes, never personal data). */
const reasonOf = (response: Response) =>
  response.text().then(
    (text) => text.slice(0, 500),
    () => "",
  );

/** A push service's answer as an outcome. */
export async function outcomeOf(response: Response): Promise<PushOutcome> {
  const { status } = response;
  if (status >= 200 && status < 300) {
    await response.body?.cancel();
    return { result: "sent", status };
  }
  const reason = await reasonOf(response);
  if (status === 404 || status === 410) return { result: "gone", status, reason };
  if (status === 429 || status >= 500) return { result: "retry", status, reason };
  return { result: "failed", status, reason };
}

/**
 * A refusal that names the address itself as dead, though not a 404 or 410: APNs' 400
 * `BadDeviceToken` or `DeviceTokenNotForTopic`; FCM's 400 `INVALID_ARGUMENT` about the registration
 * token, or 403 `SENDER_ID_MISMATCH` (a token of another app). Gone: the registration is removed,
 * as Apple and Google ask, instead of failing again on every event.
 */
export function deadAddress(outcome: PushOutcome): PushOutcome {
  if (outcome.result !== "failed") return outcome;
  const { status, reason } = outcome;
  const dead =
    (status === 400 && /"reason"\s*:\s*"(BadDeviceToken|DeviceTokenNotForTopic)"/.test(reason)) ||
    (status === 400 && /INVALID_ARGUMENT/.test(reason) && /registration token/i.test(reason)) ||
    (status === 403 && /SENDER_ID_MISMATCH/.test(reason));
  return dead ? { result: "gone", status, reason } : outcome;
}

/** No answer at all (a network error, the timeout): retried. */
export function noAnswer(err: unknown): PushOutcome {
  const { name, message } = loggableError(err);
  return { result: "retry", status: null, reason: `no answer: ${name}: ${message}` };
}

/** `send`'s answer as an outcome; no answer is a retry. */
export async function sendAndClassify(send: () => Promise<Response>): Promise<PushOutcome> {
  let response: Response;
  try {
    response = await send();
  } catch (err) {
    return noAnswer(err);
  }
  return outcomeOf(response);
}

/** A secret the kind needs is not set: the push is skipped, naming it. */
export const missingSecret = (names: string): PushOutcome => ({
  result: "skipped",
  reason: `the Worker secret ${names} is not set: set it with \`wrangler secret put\` (docs/app.md, "Push")`,
});
