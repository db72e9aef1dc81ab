import { sql } from "drizzle-orm";
import { companyEventMarks, memberships } from "../db/schema";
import type { Deps } from "./deps";
import { WriteBatch } from "./outbox";

/**
 * The events a company's object raised (its outbox, docs/architecture.md, "The Company object"),
 * recorded in D1 as webhook deliveries: right after the change that raised them (the scan-events
 * consumer), and by the `company-events` background message the object's alarm sends when some
 * wait past their time (a forward that failed or never ran).
 */

/** Events per D1 batch: one INSERT … SELECT of deliveries, whatever the number. */
export const FORWARD_EVENTS = 200;
/** About this much payload text per D1 batch (the events are bound as one JSON value). */
export const FORWARD_BYTES = 500_000;
/** Batches per call; what is left is the next message's (`more`). */
export const FORWARD_ROUNDS = 10;
/**
 * Deliveries per call, after which no further batch starts: each 100 are one queue send, and an event
 * fans out to up to 50 webhooks, so 10 full batches could need 1,000 sends, past the 1,000 operations
 * an invocation has (docs/architecture.md, "Background work"). One batch more is at most 10,000.
 */
export const FORWARD_DELIVERIES = 40_000;

/**
 * Takes the object's oldest events, records them in ONE D1 batch, then acknowledges them to the
 * object; again while a batch was full. The batch records each event only if its `seq` is above
 * the company's mark (`company_event_marks`), then moves the mark up to the last one (never back):
 * a run forwarded twice, or by two forwarders at once, is recorded once (guarding the whole run by
 * whether the mark moved would record again the events two overlapping takes share). The deliveries are
 * enqueued after the commit (`WriteBatch`), at most about `FORWARD_DELIVERIES` a call. Returns how many
 * events were taken, and whether more may wait.
 */
export async function forwardCompanyEvents(
  deps: Deps,
  companyId: number,
): Promise<{ forwarded: number; more: boolean }> {
  const object = deps.companyObjects.of(companyId);
  let forwarded = 0;
  let deliveries = 0;
  for (let round = 0; round < FORWARD_ROUNDS && deliveries < FORWARD_DELIVERIES; round++) {
    const taken = await object.takeEvents(FORWARD_EVENTS, FORWARD_BYTES);
    if (taken.length === 0) return { forwarded, more: false };
    const last = taken.at(-1)!.seq;
    const seqs = JSON.stringify(taken.map((event) => event.seq));
    const mark = sql`coalesce((select ${companyEventMarks.seq} from ${companyEventMarks} where ${companyEventMarks.companyId} = ${companyId}), 0)`;
    const batch = new WriteBatch(deps);
    batch.emit(
      taken.map((event) => ({
        companyId,
        event: event.event,
        payload: JSON.parse(event.payload) as unknown,
        at: new Date(event.at),
      })),
      {
        // Each event once (above the mark), and only about a person who is still a member: one removed
        // since the change (its object forgets them) is not the company's to hear about.
        when: (payload, index) =>
          sql`json_extract(${seqs}, '$[' || ${index} || ']') > ${mark} and exists (select 1 from ${memberships}
            where ${memberships.companyId} = ${companyId}
              and ${memberships.personId} = coalesce(json_extract(${payload}, '$.employee_id'), json_extract(${payload}, '$.person_id')))`,
      },
    );
    batch.add(
      deps.db
        .insert(companyEventMarks)
        .values({ companyId, seq: last })
        .onConflictDoUpdate({
          target: companyEventMarks.companyId,
          set: { seq: sql`excluded.seq` },
          setWhere: sql`${companyEventMarks.seq} < excluded.seq`,
        }),
    );
    deliveries += (await batch.commit()).deliveries.length;
    await object.ackEvents(last);
    forwarded += taken.length;
    const bytes = taken.reduce((sum, event) => sum + event.payload.length, 0);
    if (taken.length < FORWARD_EVENTS && bytes < FORWARD_BYTES) return { forwarded, more: false };
  }
  return { forwarded, more: true };
}
