import { and, asc, eq, inArray, isNull, lte, notExists, or, sql } from "drizzle-orm";
import { alias } from "drizzle-orm/sqlite-core";
import { WriteBatch } from "./outbox";
import type { Deps } from "./deps";
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
 * Assigns a secure number from the pool to a person who holds none
 * (docs/decisions.md); `heartbeat` calls it when its read found none. The assignment is one UPDATE that takes the lowest free
 * number only if the person still holds none; D1 runs statements one at a
 * time, and the unique index on `person_id` backs it, so two concurrent first
 * heartbeats give one number and no number goes to two people. A number
 * released by a removed account rests for `RELEASE_QUARANTINE_MS` first.
 * Null when the pool is empty (logged).
 */
async function assignSecureNumber(deps: Deps, personId: number): Promise<SecureNumber | null> {
  const { db } = deps;
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
  batch.retellPerson(personId);
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
  secure_country_code: string | null;
  secure_number: string | null;
  secure_e164: string | null;
  user: number | null;
  company: number | null;
  coworker: number | null;
};

/**
 * The heartbeat (docs/decisions.md): the `last_*` fields, the newest change
 * time of what each names for this person (null when there is none), and
 * their secure number. One D1 query of scalar subqueries, each served by an
 * index, and one call to the person's object (the newest activity id, the
 * last trust request, the newest contact change, their company settings),
 * made together. Two cases read a little more: a person with companies set
 * to `trusted` they do not belong to reads those companies' times (one more
 * D1 query), and a person without a secure number (their first heartbeat)
 * makes a write, the assignment. Null when the person is gone.
 */
export async function heartbeat(deps: Deps, personId: number) {
  const me = personId;
  const times = deps.db.get<Times & { memberOf: string }>(sql`
    select
      sn.country_code as secure_country_code,
      sn.number as secure_number,
      sn.e164 as secure_e164,
      (select updated_at from people where id = ${me}) as user,
      (select json_group_array(company_id) from memberships where person_id = ${me}) as memberOf,
      (select max(t) from (
         select c.updated_at as t from companies c
           where c.id in (select company_id from memberships where person_id = ${me})
         union all select updated_at from memberships where person_id = ${me})) as company,
      (select max(case when r.first_person_id = ${me} then r.second_at else r.first_at end)
         from company_rosters r
         where r.company_id in (select company_id from memberships where person_id = ${me})) as coworker
    from (select 1) left join secure_numbers sn on sn.person_id = ${me}`);
  // The rest is in the person's object: asked at the same time as D1.
  const [row, own] = await Promise.all([times, deps.objects.of(me).heartbeatTimes()]);
  if (!row || row.user === null) return null;
  // The object's `activity` is the id of the person's newest activity (0: none yet).
  const lastActivityId = own.activity;
  const memberOf = new Set(JSON.parse(row.memberOf) as number[]);
  const elsewhere = own.trustedCompanies.filter((id) => !memberOf.has(id));
  const trustedTimes =
    elsewhere.length === 0
      ? null
      : ((
          await deps.db.get<{ t: number | null }>(
            sql`select max(updated_at) as t from companies where id in (select value from json_each(${JSON.stringify(elsewhere)}))`,
          )
        )?.t ?? null);
  const newest = (...times: (number | null)[]) =>
    times.reduce<number | null>((max, t) => (t === null ? max : max === null ? t : Math.max(max, t)), null);
  const at = (ms: number | null) => iso(ms === null ? null : new Date(ms));
  return {
    last_contact_update: at(own.contact),
    last_trust_request: at(own.trustRequest),
    last_company_update: at(newest(row.company, own.companySetting, trustedTimes)),
    last_coworker_update: at(row.coworker),
    last_user_update: at(row.user),
    last_activity_id: String(lastActivityId),
    secure_number:
      row.secure_e164 === null
        ? await assignSecureNumber(deps, me)
        : { country_code: row.secure_country_code!, number: row.secure_number!, e164: row.secure_e164 },
  };
}
