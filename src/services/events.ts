import { and, eq, sql } from "drizzle-orm";
import { type SQLiteColumn, unionAll } from "drizzle-orm/sqlite-core";
import type { Db } from "../db/client";
import { insertChunks } from "../db/batch";
import { memberships, webhookDeliveries, webhooks } from "../db/schema";

/** Event names accepted at webhook creation and delivered (DECISIONS §6). */
export const EVENT_NAMES = [
  "scan:started",
  "scan:completed",
  "scan:not_found",
  "scan:found",
  "scan:failed",
  "exposure:created",
  "exposure:requested",
  "exposure:closed",
  "request:created",
  "request:closed",
  "person:created",
  "person:updated",
  "person:removed",
] as const;

export type EventName = (typeof EVENT_NAMES)[number];

/** The message on the webhook-deliveries queue: one history row to deliver. */
export type DeliveryMessage = { kind: "deliver"; deliveryId: string };

/** One event to record: for a company, or for every company a person belongs to (scan and exposure events). */
export type Emission = { event: EventName; payload: unknown } & ({ companyId: number } | { personId: number });

/** Who receives what: one row per active webhook (and, when read for people, per person of its company). */
export type Audience = { personId: number | null; companyId: number; webhookId: number; event: string }[];

/** `column in (…)` over a list of any length, bound as one JSON parameter (D1 binds at most 100 per statement). */
export const inList = (column: SQLiteColumn, values: readonly (number | string)[]) =>
  sql`${column} in (select value from json_each(${JSON.stringify(values)}))`;

/**
 * The statement reading the audience of some events: the active webhooks
 * subscribed to `events` of the companies named and of the companies the
 * people named belong to. `emitMany` runs it; a caller that emits after its
 * own reads can run it in the same batch and hand the rows to `emitMany`.
 */
export function audienceQuery(
  db: Db,
  { companyIds = [], personIds = [], events }: { companyIds?: number[]; personIds?: number[]; events: EventName[] },
) {
  const subscribed = and(inList(webhooks.event, events), eq(webhooks.active, true));
  return unionAll(
    db
      .select({
        personId: sql<number | null>`null`.as("person_id"),
        companyId: webhooks.companyId,
        webhookId: webhooks.id,
        event: webhooks.event,
      })
      .from(webhooks)
      .where(and(inList(webhooks.companyId, companyIds), subscribed)),
    db
      .select({
        personId: memberships.personId,
        companyId: webhooks.companyId,
        webhookId: webhooks.id,
        event: webhooks.event,
      })
      .from(memberships)
      .innerJoin(webhooks, eq(webhooks.companyId, memberships.companyId))
      .where(and(inList(memberships.personId, personIds), subscribed)),
  );
}

/**
 * The one event emitter. Writes one `pending` history row per active webhook
 * subscribed to each item's event (of the item's company, or of every
 * company the item's person belongs to), all in one batch and in the order
 * of `items`, then enqueues them for delivery. Returns the delivery ids.
 *
 * The rows are the outbox: if enqueueing fails, the hourly sweep re-enqueues
 * pending rows, so an event recorded here is delivered at least once. It
 * never throws: it runs after the change it reports has been written, so
 * the caller must succeed. If the rows cannot be written the events are
 * lost; that is logged as an error and `[]` returned.
 *
 * `audience`, when given, is what `audienceQuery` read for these items
 * (saving that read); items it does not cover reach nobody.
 */
export async function emitMany(
  db: Db,
  queue: Queue<DeliveryMessage>,
  items: Emission[],
  audience?: Audience,
): Promise<string[]> {
  if (items.length === 0) return [];
  const events = [...new Set(items.map((item) => item.event))];
  const companyIds = [...new Set(items.flatMap((item) => ("companyId" in item ? [item.companyId] : [])))];
  const personIds = [...new Set(items.flatMap((item) => ("personId" in item ? [item.personId] : [])))];
  let recipients = audience;
  try {
    recipients ??= await audienceQuery(db, { companyIds, personIds, events }).all();
    const rows = deliveryRows(items, recipients, new Date());
    if (rows.length === 0) return [];
    const [first, ...rest] = insertChunks(db, webhookDeliveries, rows);
    await db.batch([first!, ...rest]);
    const ids = rows.map((row) => row.id);
    await enqueueDeliveries(queue, ids);
    return ids;
  } catch (err) {
    const reached = recipients?.map((row) => row.companyId) ?? [];
    console.error(
      JSON.stringify({
        level: "error",
        error: `emitting events failed: ${err instanceof Error ? `${err.name}: ${err.message}` : String(err)}`,
        events,
        companies: [...new Set([...companyIds, ...reached])].sort((a, b) => a - b),
        ...(personIds.length > 0 ? { people: personIds } : {}),
        note: "no delivery row was written (they are the outbox), so these events are lost",
      }),
    );
    return [];
  }
}

/** The history rows for `items`: per item, its recipients' webhooks by company and id. */
function deliveryRows(items: Emission[], audience: Audience, now: Date) {
  const webhooksOf = new Map<string, Map<number, number>>();
  const add = (key: string, webhookId: number, companyId: number) => {
    const found = webhooksOf.get(key) ?? new Map<number, number>();
    webhooksOf.set(key, found.set(webhookId, companyId));
  };
  for (const row of audience) {
    add(`${row.event} company ${row.companyId}`, row.webhookId, row.companyId);
    if (row.personId !== null) add(`${row.event} person ${row.personId}`, row.webhookId, row.companyId);
  }
  return items.flatMap((item) => {
    const key =
      "companyId" in item ? `${item.event} company ${item.companyId}` : `${item.event} person ${item.personId}`;
    const targets = [...(webhooksOf.get(key) ?? [])].sort(([a, ac], [b, bc]) => ac - bc || a - b);
    return targets.map(([webhookId, companyId]) => ({
      id: crypto.randomUUID(),
      companyId,
      webhookId,
      event: item.event,
      payload: item.payload,
      status: "pending" as const,
      createdAt: now,
      updatedAt: now,
    }));
  });
}

/** `emitMany` for one event of one company. */
export function emitEvent(
  db: Db,
  queue: Queue<DeliveryMessage>,
  companyId: number,
  event: EventName,
  payload: unknown,
): Promise<string[]> {
  return emitMany(db, queue, [{ companyId, event, payload }]);
}

/** `emitMany` for one event sent to every company the person belongs to. */
export function emitForPerson(
  db: Db,
  queue: Queue<DeliveryMessage>,
  personId: number,
  event: EventName,
  payload: unknown,
): Promise<string[]> {
  return emitMany(db, queue, [{ personId, event, payload }]);
}

/** Enqueues deliveries; a failure is logged and left to the outbox sweep. */
export async function enqueueDeliveries(queue: Queue<DeliveryMessage>, deliveryIds: string[]) {
  if (deliveryIds.length === 0) return;
  try {
    // sendBatch takes at most 100 messages.
    for (let i = 0; i < deliveryIds.length; i += 100) {
      await queue.sendBatch(
        deliveryIds.slice(i, i + 100).map((deliveryId) => ({ body: { kind: "deliver", deliveryId } as const })),
      );
    }
  } catch (err) {
    console.error(
      JSON.stringify({
        level: "error",
        error: `enqueueing deliveries failed: ${String(err)}`,
        deliveryIds,
        note: "left for the outbox sweep",
      }),
    );
  }
}
