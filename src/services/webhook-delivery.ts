import { and, asc, eq, lt, notInArray, sql } from "drizzle-orm";
import type { Db } from "../db/client";
import { webhookAttempts, webhookDeliveries, webhooks } from "../db/schema";
import { endpointProblem } from "../lib/outbound-url";
import { inList } from "../db/sql";
import { enqueueDeliveries, renderedPayload, type DeliveryMessage } from "./events";
import { SECRET_PREFIX } from "./webhooks";

/**
 * Delivery of one webhook history row, following the Standard Webhooks
 * specification (https://www.standardwebhooks.com/); what a receiver sees is
 * docs/webhooks.md.
 */

/** Waits before attempts 2…8; after the 8th attempt the delivery has failed. */
export const RETRY_DELAYS_SECONDS = [10, 60, 300, 1800, 7200, 21600, 43200] as const;
export const MAX_ATTEMPTS = RETRY_DELAYS_SECONDS.length + 1;
/** How long an attempt waits for the endpoint's answer. */
export const DELIVERY_TIMEOUT_MS = 10_000;
/** …when an earlier attempt to the same endpoint failed in the same consumer run (`Lanes`). */
export const FAILING_TIMEOUT_MS = 3_000;
/**
 * POSTs in flight at once in one consumer run. A Worker invocation keeps at
 * most six connections open and queues the rest, where their timeouts would
 * run down unseen; five leave one for the queue's and D1's own traffic.
 */
export const CONCURRENT_POSTS = 5;
/** A `Retry-After` longer than this is cut to it (also the longest delay a queue message can take). */
export const MAX_RETRY_AFTER_SECONDS = 12 * 3600;
/** A webhook whose attempts have all failed for this long is deactivated. */
export const FAILING_LIMIT_MS = 5 * 24 * 3600 * 1000;
/** A `pending` row older than this was not enqueued (or its message was lost): the sweep re-enqueues it. */
export const OUTBOX_STALE_MS = 5 * 60_000;
/** The event of `POST /webhooks/{id}/test`; not one subscribers choose. */
export const TEST_EVENT = "webhook:test";

export const DISABLED_410 = "endpoint answered 410";
export const DISABLED_FAILING = "failing for 5 days";

/** The body POSTed: `{"type", "timestamp", "data"}`; identical on every attempt and resend. */
export const deliveryBody = (row: { event: string; createdAt: Date }, payload: unknown) =>
  JSON.stringify({ type: row.event, timestamp: row.createdAt.toISOString(), data: payload });

const decodeBase64 = (value: string) => Uint8Array.from(atob(value), (char) => char.charCodeAt(0));
const encodeBase64 = (bytes: ArrayBuffer) => btoa(String.fromCharCode(...new Uint8Array(bytes)));

/** `v1,` + base64 HMAC-SHA256 of `{id}.{timestamp}.{body}`, keyed with the secret's decoded bytes. */
export async function signature(secret: string, id: string, timestamp: number, body: string): Promise<string> {
  const raw = secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret;
  const key = await crypto.subtle.importKey("raw", decodeBase64(raw), { name: "HMAC", hash: "SHA-256" }, false, [
    "sign",
  ]);
  const mac = await crypto.subtle.sign("HMAC", key, new TextEncoder().encode(`${id}.${timestamp}.${body}`));
  return `v1,${encodeBase64(mac)}`;
}

type Signing = { secret: string; previousSecret: string | null; previousSecretExpiresAt: Date | null };

/**
 * `webhook-signature`: the current secret's signature, then, for 24 h after a
 * rotation, the previous secret's, space-separated (a receiver accepts any).
 */
export async function signatureHeader(keys: Signing, id: string, timestamp: number, body: string, now: Date) {
  const secrets = [keys.secret];
  if (keys.previousSecret && keys.previousSecretExpiresAt && keys.previousSecretExpiresAt > now) {
    secrets.push(keys.previousSecret);
  }
  const signatures = await Promise.all(secrets.map((secret) => signature(secret, id, timestamp, body)));
  return signatures.join(" ");
}

/**
 * The `result` of one attempt: the HTTP status as digits, or one of these.
 * A network error's own text is never recorded: it would tell a company
 * what lies behind an address it does not own.
 */
export type AttemptResult = `${number}` | "timeout" | "connection failed" | "invalid response" | "invalid endpoint";

type Answer = { result: AttemptResult; status: number | null; retryAfterSeconds: number | null; durationMs: number };

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

/** `Retry-After` in seconds (delay-seconds or an HTTP date), at most 12 h; null when absent or unreadable. */
export function retryAfterSeconds(value: string | null, now: Date): number | null {
  if (!value) return null;
  const trimmed = value.trim();
  let seconds: number;
  if (/^\d+$/.test(trimmed)) seconds = Number(trimmed);
  else {
    const at = Date.parse(trimmed);
    if (Number.isNaN(at)) return null;
    seconds = Math.ceil((at - now.getTime()) / 1000);
  }
  return Math.min(Math.max(seconds, 0), MAX_RETRY_AFTER_SECONDS);
}

const isSuccess = (answer: Answer) => answer.status !== null && answer.status >= 200 && answer.status < 300;

/** What the consumer does with the message after an attempt. */
export type DeliveryOutcome =
  | { action: "ack"; status: "success" | "failed" | "skipped" | "missing" | "done" }
  | { action: "retry"; delaySeconds: number };

const FINISHED = ["success", "failed"] as const;

/** The rows and their webhooks as attempts need them. */
function loadDeliveries(db: Db, deliveryIds: string[]) {
  return db
    .select({
      id: webhookDeliveries.id,
      companyId: webhookDeliveries.companyId,
      event: webhookDeliveries.event,
      payload: webhookDeliveries.payload,
      rendered: webhookDeliveries.rendered,
      status: webhookDeliveries.status,
      attempts: webhookDeliveries.attempts,
      createdAt: webhookDeliveries.createdAt,
      webhook: {
        id: webhooks.id,
        endpoint: webhooks.endpoint,
        secret: webhooks.secret,
        previousSecret: webhooks.previousSecret,
        previousSecretExpiresAt: webhooks.previousSecretExpiresAt,
        active: webhooks.active,
        failingSince: webhooks.failingSince,
      },
    })
    .from(webhookDeliveries)
    .leftJoin(webhooks, eq(webhooks.id, webhookDeliveries.webhookId))
    .where(inList(webhookDeliveries.id, deliveryIds))
    .all();
}

const loadDelivery = async (db: Db, deliveryId: string) => (await loadDeliveries(db, [deliveryId]))[0];

export type Delivery = NonNullable<Awaited<ReturnType<typeof loadDelivery>>>;

/** The rows of a consumer run's messages, by id, in one query. */
export async function deliveriesById(db: Db, deliveryIds: string[]): Promise<Map<string, Delivery>> {
  const rows = deliveryIds.length > 0 ? await loadDeliveries(db, [...new Set(deliveryIds)]) : [];
  return new Map(rows.map((row) => [row.id, row]));
}

/**
 * The attempts of one consumer run (docs/webhooks.md, "Timeouts and
 * fairness"): at most `CONCURRENT_POSTS` at once, at most one at a time per
 * endpoint (the next one reads its row after the previous one recorded its
 * outcome, so a 410 or a deactivation is seen), and an endpoint that failed
 * earlier in the run gets `FAILING_TIMEOUT_MS` instead of
 * `DELIVERY_TIMEOUT_MS`. Waiting attempts start in the order they asked,
 * skipping those whose endpoint is busy, so a slow or hanging endpoint holds
 * one lane and delays no other endpoint's attempt by more than one timeout.
 */
export class Lanes {
  #free = CONCURRENT_POSTS;
  readonly #busy = new Set<string>();
  readonly #failed = new Set<string>();
  readonly #waiting: { endpoint: string; start: () => void }[] = [];

  /** Runs `attempt` in a lane for `endpoint`, with the timeout its POST gets; `ok` says whether it succeeded. */
  async run<T>(endpoint: string, attempt: (timeoutMs: number) => Promise<T>, ok: (result: T) => boolean): Promise<T> {
    await new Promise<void>((start) => {
      this.#waiting.push({ endpoint, start });
      this.#next();
    });
    try {
      const result = await attempt(this.#failed.has(endpoint) ? FAILING_TIMEOUT_MS : DELIVERY_TIMEOUT_MS);
      if (!ok(result)) this.#failed.add(endpoint);
      return result;
    } catch (err) {
      this.#failed.add(endpoint);
      throw err;
    } finally {
      this.#busy.delete(endpoint);
      this.#free++;
      this.#next();
    }
  }

  #next() {
    while (this.#free > 0) {
      const index = this.#waiting.findIndex((waiting) => !this.#busy.has(waiting.endpoint));
      if (index === -1) return;
      const [waiting] = this.#waiting.splice(index, 1);
      this.#busy.add(waiting!.endpoint);
      this.#free--;
      waiting!.start();
    }
  }
}

/**
 * The order a consumer run attempts its messages in: endpoints that are not
 * failing first (a webhook whose last attempt failed goes after them), and
 * within each, one message per endpoint in turn.
 */
export function fairOrder<M>(messages: M[], rowOf: (message: M) => Delivery | undefined): M[] {
  const turn = new Map<string, number>();
  const keyed = messages.map((message, index) => {
    const webhook = rowOf(message)?.webhook;
    const endpoint = webhook?.endpoint ?? "";
    const round = turn.get(endpoint) ?? 0;
    turn.set(endpoint, round + 1);
    return { message, index, failing: webhook?.failingSince ? 1 : 0, round };
  });
  keyed.sort((a, b) => a.failing - b.failing || a.round - b.round || a.index - b.index);
  return keyed.map((entry) => entry.message);
}

/**
 * THE place the payload of a delivery is read before it is signed. A row
 * written with `rendered = false` holds only `{"id": n}` of a person; the
 * Person is rendered (and stored, so every attempt sends the same body).
 */
const payloadToSend = (db: Db, row: Delivery): Promise<unknown> => renderedPayload(db, row);

/** Signs and POSTs `row` to its webhook once. */
async function send(
  db: Db,
  row: Delivery,
  webhook: NonNullable<Delivery["webhook"]>,
  environment: string,
  now: Date,
  timeoutMs = DELIVERY_TIMEOUT_MS,
) {
  const body = deliveryBody(row, await payloadToSend(db, row));
  const timestamp = Math.floor(now.getTime() / 1000);
  const headers = {
    "webhook-id": row.id,
    "webhook-timestamp": String(timestamp),
    "webhook-signature": await signatureHeader(webhook, row.id, timestamp, body, now),
  };
  return post(webhook.endpoint, environment, headers, body, now, timeoutMs);
}

export type AttemptOptions = {
  environment: string;
  now?: Date;
  /** How long the POST waits for an answer (`Lanes` decides it in a consumer run). */
  timeoutMs?: number;
  /** The row, when it was read already (`deliveriesById`); null: there is none. */
  row?: Delivery | null;
};

/**
 * One attempt at delivering history row `deliveryId`, with the response
 * handling of docs/webhooks.md: 2xx succeeds; 410 fails it and deactivates
 * the webhook; a refused endpoint fails it at once; anything else is retried
 * on the schedule (a `Retry-After` on 429/503 lengthens the wait, up to
 * 12 h) until the 8th attempt, or until the webhook has failed for 5 days,
 * which deactivates it.
 *
 * `messageAttempts` is the queue's attempt count; the row's own count is
 * used when it is ahead (a re-enqueued row keeps its count), so a delivery
 * never gets more than eight POSTs from the schedule.
 */
export async function attemptDelivery(
  db: Db,
  deliveryId: string,
  messageAttempts: number,
  { environment, now = new Date(), timeoutMs = DELIVERY_TIMEOUT_MS, row: loaded }: AttemptOptions,
): Promise<DeliveryOutcome> {
  const row = loaded === undefined ? await loadDelivery(db, deliveryId) : loaded;
  if (!row) return { action: "ack", status: "missing" };
  // A duplicate message (the outbox sweep, at-least-once queues) for a finished row.
  if ((FINISHED as readonly string[]).includes(row.status)) return { action: "ack", status: "done" };

  const webhook = row.webhook?.id != null ? row.webhook : null;
  if (!webhook || !webhook.active) {
    const why = webhook ? "the webhook is inactive" : "the webhook was deleted";
    await finishStatement(db, deliveryId, { status: "failed", result: `not delivered: ${why}` });
    return { action: "ack", status: "skipped" };
  }

  const attempt = Math.max(messageAttempts, row.attempts + 1);
  const answer = await send(db, row, webhook, environment, now, timeoutMs);
  const ok = isSuccess(answer);
  const gone = answer.status === 410;
  const final = ok || gone || answer.result === "invalid endpoint" || attempt >= MAX_ATTEMPTS;

  const [, , health] = await db.batch([
    recordAttempt(db, deliveryId, now, answer),
    finishStatement(db, deliveryId, {
      status: ok ? "success" : final ? "failed" : "dispatched",
      result: answer.result,
      attempts: attempt,
      ...(ok ? { deliveredAt: now } : {}),
    }),
    webhookHealth(db, webhook.id, ok, gone, now),
  ]);
  if (ok) return { action: "ack", status: "success" };
  // Deactivated by this answer (410, or failing for 5 days): nothing more is sent.
  if (final || health[0]?.active === false) {
    if (!final) await finishStatement(db, deliveryId, { status: "failed" });
    return { action: "ack", status: "failed" };
  }
  const scheduled = RETRY_DELAYS_SECONDS[attempt - 1]!;
  return { action: "retry", delaySeconds: Math.max(scheduled, answer.retryAfterSeconds ?? 0) };
}

/**
 * The webhook's side of an attempt: a success clears the failing clock; a
 * failure starts it if needed; a 410, or a failure 5 days after the clock
 * started, deactivates the webhook with its reason (unless already inactive).
 */
function webhookHealth(db: Db, webhookId: number, ok: boolean, gone: boolean, now: Date) {
  if (ok) {
    return db
      .update(webhooks)
      .set({ failingSince: null, updatedAt: sql`${webhooks.updatedAt}` })
      .where(eq(webhooks.id, webhookId))
      .returning({ active: webhooks.active });
  }
  const since = sql`coalesce(${webhooks.failingSince}, ${now.getTime()})`;
  const deactivate = gone ? sql`1` : sql`${since} <= ${now.getTime() - FAILING_LIMIT_MS}`;
  const reason = gone ? DISABLED_410 : DISABLED_FAILING;
  // Every right-hand side reads the row as it was before this statement.
  return db
    .update(webhooks)
    .set({
      failingSince: sql`${since}`,
      active: sql`case when ${deactivate} then 0 else ${webhooks.active} end`,
      disabledReason: sql`case when ${webhooks.active} and ${deactivate} then ${reason} else ${webhooks.disabledReason} end`,
      updatedAt: sql`case when ${webhooks.active} and ${deactivate} then ${now.getTime()} else ${webhooks.updatedAt} end`,
    })
    .where(eq(webhooks.id, webhookId))
    .returning({ active: webhooks.active });
}

function recordAttempt(db: Db, deliveryId: string, now: Date, answer: Answer) {
  return db
    .insert(webhookAttempts)
    .values({ deliveryId, at: now, result: answer.result, durationMs: answer.durationMs });
}

type Finish = Partial<Pick<typeof webhookDeliveries.$inferInsert, "status" | "result" | "attempts" | "deliveredAt">>;

/** Writes an attempt's outcome unless the row finished meanwhile (a concurrent duplicate). */
function finishStatement(db: Db, deliveryId: string, fields: Finish) {
  return db
    .update(webhookDeliveries)
    .set({ ...fields, updatedAt: new Date() })
    .where(and(eq(webhookDeliveries.id, deliveryId), notInArray(webhookDeliveries.status, [...FINISHED])));
}

/**
 * `POST /webhooks/{id}/test`: records a `webhook:test` entry in the history
 * and sends it now, once, whether or not the webhook is active. A test does
 * not change the webhook (no deactivation, no failing clock).
 */
export async function sendTestEvent(
  db: Db,
  companyId: number,
  webhookId: number,
  { environment, now = new Date() }: AttemptOptions,
) {
  const webhook = await db
    .select({ id: webhooks.id })
    .from(webhooks)
    .where(and(eq(webhooks.companyId, companyId), eq(webhooks.id, webhookId)))
    .get();
  if (!webhook) return null;
  const id = crypto.randomUUID();
  await db.insert(webhookDeliveries).values({
    id,
    companyId,
    webhookId,
    event: TEST_EVENT,
    payload: { webhook_id: webhookId },
    status: "pending",
    createdAt: now,
    updatedAt: now,
  });
  const row = (await loadDelivery(db, id))!;
  const answer = await send(db, row, row.webhook!, environment, now);
  const status = isSuccess(answer) ? "success" : "failed";
  await db.batch([
    recordAttempt(db, id, now, answer),
    finishStatement(db, id, {
      status,
      result: answer.result,
      attempts: 1,
      ...(status === "success" ? { deliveredAt: now } : {}),
    }),
  ]);
  return { status, result: answer.result, history_id: id } as const;
}

export type ResendRefusal = "not found" | "webhook deleted" | "webhook inactive";

/**
 * `POST /webhooks/history/{id}/resend`: the entry is delivered again, same
 * `webhook-id` and body, on a fresh schedule of up to eight attempts. Its
 * earlier attempts stay listed. A message still scheduled for the entry may
 * deliver it once more: receivers deduplicate by `webhook-id`.
 */
export async function resendDelivery(
  db: Db,
  queue: Queue<DeliveryMessage>,
  companyId: number,
  deliveryId: string,
): Promise<{ ok: true } | { ok: false; why: ResendRefusal }> {
  const row = await db
    .select({ webhookId: webhooks.id, active: webhooks.active })
    .from(webhookDeliveries)
    .leftJoin(webhooks, eq(webhooks.id, webhookDeliveries.webhookId))
    .where(and(eq(webhookDeliveries.companyId, companyId), eq(webhookDeliveries.id, deliveryId)))
    .get();
  if (!row) return { ok: false, why: "not found" };
  if (row.webhookId === null) return { ok: false, why: "webhook deleted" };
  if (!row.active) return { ok: false, why: "webhook inactive" };
  await db
    .update(webhookDeliveries)
    .set({ status: "pending", attempts: 0, deliveredAt: null, updatedAt: new Date() })
    .where(eq(webhookDeliveries.id, deliveryId));
  await enqueueDeliveries(queue, [deliveryId]);
  return { ok: true };
}

/** The attempts of one history entry, oldest first. */
export function listAttempts(db: Db, deliveryId: string) {
  return db
    .select({ at: webhookAttempts.at, result: webhookAttempts.result, durationMs: webhookAttempts.durationMs })
    .from(webhookAttempts)
    .where(eq(webhookAttempts.deliveryId, deliveryId))
    .orderBy(asc(webhookAttempts.id))
    .all();
}

/**
 * The outbox sweep: history rows still `pending` five minutes after their
 * last change were never enqueued (or their message was lost); they are
 * enqueued again, oldest first, at most `limit` per run. Touching
 * `updated_at` means a row is re-sent at most once per five minutes however
 * often the sweep is fired; a duplicate message is harmless (the consumer
 * skips finished rows, and `webhook-id` lets receivers drop repeats).
 */
export async function sweepOutbox(db: Db, queue: Queue<DeliveryMessage>, now: Date, limit = 500) {
  const stale = await db
    .select({ id: webhookDeliveries.id })
    .from(webhookDeliveries)
    .where(
      and(
        eq(webhookDeliveries.status, "pending"),
        lt(webhookDeliveries.updatedAt, new Date(now.getTime() - OUTBOX_STALE_MS)),
      ),
    )
    .orderBy(asc(webhookDeliveries.updatedAt))
    .limit(limit)
    .all();
  if (stale.length === 0) return 0;
  const ids = stale.map((row) => row.id);
  await db
    .update(webhookDeliveries)
    .set({ updatedAt: now })
    .where(and(inList(webhookDeliveries.id, ids), eq(webhookDeliveries.status, "pending")));
  await enqueueDeliveries(queue, ids);
  return ids.length;
}
