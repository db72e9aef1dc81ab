import { and, asc, eq, inArray, isNull, lte, notExists, or, sql } from "drizzle-orm";
import { alias } from "drizzle-orm/sqlite-core";
import type { Db } from "../db/client";
import { WriteBatch, type Deps } from "./outbox";
import { secureNumbers } from "../db/schema";
import { iso } from "../lib/time";

/**
 * How long a released secure number rests before it is assigned again: long
 * enough for the people who had it as a contact or trusted its holder to
 * notice the account is gone (docs/decisions.md).
 */
export const RELEASE_QUARANTINE_MS = 90 * 24 * 3600 * 1000;

export type SecureNumber = { country_code: string; number: string; e164: string };

const held = alias(secureNumbers, "held");
const free = alias(secureNumbers, "free");

const numberColumns = {
  country_code: secureNumbers.countryCode,
  number: secureNumbers.number,
  e164: secureNumbers.e164,
};

/**
 * The caller's secure number, assigning one from the pool when they have none
 * (docs/decisions.md). The assignment is one UPDATE that takes the lowest free
 * number only if the person still holds none; D1 runs statements one at a
 * time, and the unique index on `person_id` backs it, so two concurrent first
 * heartbeats give one number and no number goes to two people. A number
 * released by a removed account rests for `RELEASE_QUARANTINE_MS` first.
 * Null when the pool is empty (logged).
 */
export async function secureNumberFor(deps: Deps, personId: number): Promise<SecureNumber | null> {
  const { db } = deps;
  const current = await db.select(numberColumns).from(secureNumbers).where(eq(secureNumbers.personId, personId)).get();
  if (current) return current;

  const batch = new WriteBatch(deps);
  const assignment = batch.add(
    db
      .update(secureNumbers)
      .set({ personId, assignedAt: batch.now })
      .where(
        and(
          inArray(
            secureNumbers.id,
            db
              .select({ id: free.id })
              .from(free)
              .where(
                and(
                  isNull(free.personId),
                  or(isNull(free.releasedAt), lte(free.releasedAt, new Date(Date.now() - RELEASE_QUARANTINE_MS))),
                ),
              )
              .orderBy(asc(free.id))
              .limit(1),
          ),
          notExists(db.select({ id: held.id }).from(held).where(eq(held.personId, personId))),
        ),
      )
      .returning(numberColumns),
  );
  // Lookups to the new number find its holder (receiver record), and calls
  // from it reach the people who trusted this person (caller record).
  batch.reindexReceiver(personId);
  batch.reindexNumbersOf(personId);
  const { results } = await batch.commit();
  const [assigned] = results[assignment] as SecureNumber[];
  if (assigned) return assigned;

  // A concurrent heartbeat of the same person won, or the pool is empty.
  const raced = await db.select(numberColumns).from(secureNumbers).where(eq(secureNumbers.personId, personId)).get();
  if (raced) return raced;
  console.warn(
    JSON.stringify({
      level: "warn",
      error: "the secure-number pool is empty",
      personId,
      note: "npm run numbers -- add",
    }),
  );
  return null;
}

type Times = {
  user: number | null;
  contact: number | null;
  trust_request: number | null;
  company: number | null;
  coworker: number | null;
  activity: number;
};

/**
 * The heartbeat's `last_*` fields (docs/decisions.md): the newest change time of
 * what each names, for this person; null when there is none. One query of
 * scalar subqueries, each served by an index. Null when the person is gone.
 */
export async function heartbeatTimes(db: Db, personId: number) {
  const me = personId;
  const row = await db.get<Times>(sql`
    select
      (select updated_at from people where id = ${me}) as user,
      (select max(updated_at) from contacts where owner_id = ${me}) as contact,
      (select max(updated_at) from trust_requests where target_id = ${me}) as trust_request,
      (select max(t) from (
         select c.updated_at as t from companies c
           where c.id in (select company_id from memberships where person_id = ${me}
                          union select company_id from company_trust where person_id = ${me} and trust = 'trusted')
         union all select updated_at from company_trust where person_id = ${me}
         union all select updated_at from memberships where person_id = ${me})) as company,
      (select max(t) from (
         select p.updated_at as t from memberships m
           join memberships mine on mine.company_id = m.company_id and mine.person_id = ${me}
           join people p on p.id = m.person_id
           where m.person_id != ${me}
         union all select m.updated_at from memberships m
           join memberships mine on mine.company_id = m.company_id and mine.person_id = ${me}
           where m.person_id != ${me})) as coworker,
      max(coalesce((select max(id) from activities where sendable_type = 'person' and sendable_id = ${me}), 0),
          coalesce((select max(id) from activities where receivable_type = 'person' and receivable_id = ${me}), 0)) as activity`);
  if (!row || row.user === null) return null;
  const at = (ms: number | null) => iso(ms === null ? null : new Date(ms));
  return {
    last_contact_update: at(row.contact),
    last_trust_request: at(row.trust_request),
    last_company_update: at(row.company),
    last_coworker_update: at(row.coworker),
    last_user_update: at(row.user),
    last_activity_id: String(row.activity),
  };
}
