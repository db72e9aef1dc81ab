import { and, eq, sql } from "drizzle-orm";
import { webhookDeliveries } from "../db/schema";
import { batchableAll } from "../db/sql";
import { SEND_BATCH_MAX } from "../domain/queue-messages";
import { logError } from "../lib/log";
import type { Deps } from "./deps";
import { loadPerson, type PersonBody } from "./people";

/**
 * Events are recorded by the write that causes them, in its own batch
 * (`WriteBatch.emit` in services/outbox.ts). This module holds what both
 * ends of the pipeline share: the queue message and the rendering of Person
 * payloads; the names are src/domain/events.ts.
 */

/** People whose Persons one render statement carries (a Person is ~1 KB of JSON, bound as one value). */
const PEOPLE_PER_RENDER = 100;

/**
 * Fills the Persons of `person:*` deliveries a command just wrote (they hold
 * `{"id": n}` until then): each delivery gets the Person its id names, by one
 * UPDATE … FROM json_each per 100 people, all in one round trip. Best effort:
 * a delivery renders what is still missing itself (`renderedPayload`).
 */
export async function renderPersonDeliveries({ db }: Deps, deliveryIds: string[], persons: PersonBody[]) {
  if (deliveryIds.length === 0 || persons.length === 0) return;
  const ids = JSON.stringify(deliveryIds);
  // Preparing a statement can fail too: all of it is best effort.
  try {
    const statements = [];
    for (let i = 0; i < persons.length; i += PEOPLE_PER_RENDER) {
      const chunk = JSON.stringify(persons.slice(i, i + PEOPLE_PER_RENDER));
      statements.push(
        batchableAll(
          db,
          sql`update ${webhookDeliveries} set payload = p.value, rendered = 1
              from json_each(${chunk}) p
              where ${webhookDeliveries.id} in (select value from json_each(${ids})) and ${webhookDeliveries.rendered} = 0
                and json_extract(${webhookDeliveries.payload}, '$.id') = json_extract(p.value, '$.id')`,
        ),
      );
    }
    const [first, ...rest] = statements;
    await db.batch([first!, ...rest]);
  } catch (err) {
    logError("rendering person deliveries failed; the deliveries render it", err, { deliveries: deliveryIds.length });
  }
}

/**
 * The payload a delivery sends: as stored, or for a row not rendered yet the
 * Person as it is now (stored, so every later attempt and resend sends the
 * same body). A person removed in between is sent as `{"id": n}`.
 */
export async function renderedPayload(
  deps: Deps,
  row: { id: string; companyId: number; payload: unknown; rendered: boolean },
): Promise<unknown> {
  const { db } = deps;
  if (row.rendered) return row.payload;
  const id = (row.payload as { id?: unknown } | null)?.id;
  const person = typeof id === "number" ? await loadPerson(deps, row.companyId, id) : null;
  const stored = await db
    .update(webhookDeliveries)
    .set({ payload: person ?? row.payload, rendered: true })
    .where(and(eq(webhookDeliveries.id, row.id), eq(webhookDeliveries.rendered, false)))
    .returning({ payload: webhookDeliveries.payload })
    .get();
  if (stored) return stored.payload;
  // Rendered meanwhile (by the command, or a concurrent attempt): send what is stored.
  const current = await db
    .select({ payload: webhookDeliveries.payload })
    .from(webhookDeliveries)
    .where(eq(webhookDeliveries.id, row.id))
    .get();
  return current?.payload ?? row.payload;
}

/** Enqueues deliveries; a failure is logged and left to the outbox sweep. */
export async function enqueueDeliveries({ webhookQueue: queue }: Deps, deliveryIds: string[]) {
  if (deliveryIds.length === 0) return;
  try {
    for (let i = 0; i < deliveryIds.length; i += SEND_BATCH_MAX) {
      await queue.sendBatch(
        deliveryIds
          .slice(i, i + SEND_BATCH_MAX)
          .map((deliveryId) => ({ body: { kind: "deliver", deliveryId } as const })),
      );
    }
  } catch (err) {
    logError("enqueueing deliveries failed; left for the outbox sweep", err, { deliveries: deliveryIds.length });
  }
}
