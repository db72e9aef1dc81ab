import { endpointProblem } from "../../lib/outbound-url";
import type { Deps } from "../deps";
import { renderedPayload } from "../events";
import type { Answer, AttemptResult, Delivery } from "./records";
import { retryAfterSeconds } from "./retry-policy";
import { signatureHeader } from "./signing";

/** One signed POST of a history row to its webhook, and what the endpoint answered. */

/** How long an attempt waits for the endpoint's answer. */
export const DELIVERY_TIMEOUT_MS = 10_000;

/** The body POSTed: `{"type", "timestamp", "data"}`; identical on every attempt and resend. */
export const deliveryBody = (row: { event: string; createdAt: Date }, payload: unknown) =>
  JSON.stringify({ type: row.event, timestamp: row.createdAt.toISOString(), data: payload });

/** One POST, or none when the endpoint is refused (docs/webhooks.md, "Endpoints the service refuses"). */
async function post(
  endpoint: string,
  environment: string,
  headers: Record<string, string>,
  body: string,
  now: Date,
  timeoutMs: number,
): Promise<Answer> {
  if (endpointProblem(endpoint, environment)) {
    return { result: "invalid endpoint", status: null, retryAfterSeconds: null, durationMs: 0 };
  }
  const started = Date.now();
  try {
    const response = await fetch(endpoint, {
      method: "POST",
      headers: {
        "Content-Type": "application/json",
        "User-Agent": "privacy-platform-webhooks/1",
        ...headers,
      },
      body,
      // A redirect is an answer other than 2xx, not a new destination.
      redirect: "manual",
      signal: AbortSignal.timeout(timeoutMs),
    });
    await response.body?.cancel();
    const durationMs = Date.now() - started;
    if (response.status < 200 || response.status > 599) {
      return { result: "invalid response", status: null, retryAfterSeconds: null, durationMs };
    }
    const retryAfter =
      response.status === 429 || response.status === 503
        ? retryAfterSeconds(response.headers.get("Retry-After"), now)
        : null;
    return { result: `${response.status}`, status: response.status, retryAfterSeconds: retryAfter, durationMs };
  } catch (err) {
    return { result: networkFailure(err), status: null, retryAfterSeconds: null, durationMs: Date.now() - started };
  }
}

function networkFailure(err: unknown): AttemptResult {
  const name = err instanceof Error || err instanceof DOMException ? err.name : "";
  if (name === "TimeoutError" || name === "AbortError") return "timeout";
  const message = err instanceof Error ? err.message : String(err);
  if (/pars|malformed|invalid (http|header|response|status)|protocol/i.test(message)) return "invalid response";
  return "connection failed";
}

export const isSuccess = (answer: Answer) => answer.status !== null && answer.status >= 200 && answer.status < 300;

/**
 * THE place the payload of a delivery is read before it is signed. A row
 * written with `rendered = false` holds only `{"id": n}` of a person; the
 * Person is rendered (and stored, so every attempt sends the same body).
 */
const payloadToSend = (deps: Deps, row: Delivery): Promise<unknown> => renderedPayload(deps, row);

/** Signs and POSTs `row` to its webhook once. */
export async function send(
  deps: Deps,
  row: Delivery,
  webhook: NonNullable<Delivery["webhook"]>,
  now: Date,
  timeoutMs = DELIVERY_TIMEOUT_MS,
) {
  const body = deliveryBody(row, await payloadToSend(deps, row));
  const timestamp = Math.floor(now.getTime() / 1000);
  const headers = {
    "webhook-id": row.id,
    "webhook-timestamp": String(timestamp),
    "webhook-signature": await signatureHeader(webhook, row.id, timestamp, body, now),
  };
  return post(webhook.endpoint, deps.environment, headers, body, now, timeoutMs);
}
