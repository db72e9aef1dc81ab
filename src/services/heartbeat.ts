import { and, asc, eq, inArray, isNull, lte, notExists, or, sql } from "drizzle-orm";
import { alias } from "drizzle-orm/sqlite-core";
import { WriteBatch } from "./outbox";
import type { Deps } from "./deps";
import { secureNumbers } from "../db/schema";
import { personGone } from "../lib/answer";
import { iso } from "../lib/time";
import { d1Fallback } from "../lib/fallback-gate";
import { logError } from "../lib/log";
import { newestOf } from "../db/facts";
import { companyKey, COMPANIES_COMPLETE_KEY, coworkerTime, type CompanyRecord } from "../domain/company-records";

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
  const freeNumber = db
    .select({ id: free.id })
    .from(free)
    .where(
      and(
        isNull(free.personId),
        or(isNull(free.releasedAt), lte(free.releasedAt, new Date(Date.now() - RELEASE_QUARANTINE_MS))),
      ),
    )
    .orderBy(asc(free.id))
    .limit(1);
  // An empty pool writes nothing: a person without a number asks again every heartbeat, and each
  // would otherwise run the assignment and its index work for nothing (one read instead).
  const [anyFree, mine] = await db.batch([
    freeNumber,
    db.select(numberColumns).from(secureNumbers).where(eq(secureNumbers.personId, personId)),
  ]);
  if (mine[0]) return mine[0];
  if (anyFree.length === 0) return poolEmpty(personId);
  const assignment = batch.add(
    db
      .update(secureNumbers)
      .set({ personId, assignedAt: batch.now })
      .where(
        and(
          inArray(secureNumbers.id, freeNumber),
          notExists(db.select({ id: held.id }).from(held).where(eq(held.personId, personId))),
        ),
      )
      .returning(numberColumns),
  );
  // Lookups to the new number find its holder (receiver record), and calls
  // from it reach the people who trusted this person (caller record).
  batch.markStalePerson(personId);
  batch.markStaleNumbersOf(personId);
  const { results } = await batch.commit();
  const [assigned] = results[assignment] as SecureNumber[];
  if (assigned) return assigned;

  // A concurrent heartbeat of the same person won, or another took the last free number.
  const raced = await db.select(numberColumns).from(secureNumbers).where(eq(secureNumbers.personId, personId)).get();
  return raced ?? poolEmpty(personId);
}

function poolEmpty(personId: number): null {
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

type Own = Awaited<ReturnType<ReturnType<Deps["objects"]["of"]>["heartbeatTimes"]>>;
/** The times the answer is made of (ms, or null: none). */
type Parts = { user: number | null; company: number | null; coworker: number | null; secure: SecureNumber | null };

/** KV's bulk get reads at most 100 keys a call. */
const KV_BULK_KEYS = 100;

/**
 * The heartbeat (docs/decisions.md, "The heartbeat reads no D1"): the
 * `last_*` fields, the newest change time of what each names for this person
 * (null when there is none), and their secure number. Once the person holds
 * a secure number it is one call to their object (their facts as D1 last
 * told them — number, companies, own and membership times — and the object's
 * own times: the newest activity id, the last trust request, the newest
 * contact change, their company settings) and one KV bulk get of the `co:`
 * records of their companies and of those they set to `trusted`
 * (domain/company-records.ts): no D1 statement. D1 answers instead when the
 * object cannot (no facts yet, no number: the first heartbeat, which assigns
 * one) or KV lacks a record before the rebuild marked them all written.
 * A 401 refusal when the person is gone.
 */
export async function heartbeat(deps: Deps, personId: number) {
  const own = await deps.objects.of(personId).heartbeatTimes();
  const parts = (await fromObjectAndKv(deps, personId, own)) ?? (await fromD1(deps, personId, own));
  if (parts === null) return personGone();
  const at = (ms: number | null) => iso(ms === null ? null : new Date(ms));
  const beat = {
    last_contact_update: at(own.contact),
    last_trust_request: at(own.trustRequest),
    last_company_update: at(parts.company),
    last_coworker_update: at(parts.coworker),
    last_user_update: at(parts.user),
    // The id of the person's newest activity (0: none yet).
    last_activity_id: String(own.lastActivityId),
    secure_number: parts.secure ?? (await assignSecureNumber(deps, personId)),
  };
  return { ok: true as const, beat };
}

/** The answer's times from the object's facts and the `co:` records; null when D1 must answer. */
async function fromObjectAndKv(deps: Deps, me: number, own: Own): Promise<Parts | null> {
  const facts = own.facts;
  if (facts === null) return null;
  const ids = [...new Set([...facts.companies, ...own.trustedCompanies])];
  const records = new Map<number, CompanyRecord>();
  if (ids.length > 0) {
    const keys = [COMPANIES_COMPLETE_KEY, ...ids.map(companyKey)];
    let found: Map<string, CompanyRecord | null>;
    let kvFailed = false;
    try {
      const parts = [];
      for (let i = 0; i < keys.length; i += KV_BULK_KEYS) parts.push(keys.slice(i, i + KV_BULK_KEYS));
      const maps = await Promise.all(parts.map((part) => deps.kv.get<CompanyRecord>(part, "json")));
      found = new Map(maps.flatMap((map) => [...map]));
    } catch (err) {
      // One D1 answer a second per isolate; otherwise the object's facts answer without the company
      // records' times (lib/fallback-gate.ts).
      if (d1Fallback.pass()) {
        logError("heartbeat company records read failed; read from D1", err, { personId: me });
        return null;
      }
      found = new Map([[COMPANIES_COMPLETE_KEY, null]]);
      kvFailed = true;
    }
    const complete = kvFailed || (found.get(COMPANIES_COMPLETE_KEY) ?? null) !== null;
    for (const id of ids) {
      const record = found.get(companyKey(id)) ?? null;
      // Absent before every record was written: D1 answers. After: no such company.
      if (record === null && !complete) return null;
      if (record !== null) records.set(id, record);
    }
  }
  const member = facts.companies.flatMap((id) => records.get(id) ?? []);
  const trusted = own.trustedCompanies.flatMap((id) => records.get(id) ?? []);
  return {
    user: facts.userAt,
    company: newestOf([
      ...member.map((record) => record.u),
      facts.membershipAt,
      own.companySetting,
      ...trusted.map((record) => record.u),
    ]),
    coworker: newestOf(member.map((record) => coworkerTime(record, me))),
    secure: facts.secure,
  };
}

/**
 * The answer's times from D1: one query of scalar subqueries, each served by
 * an index, and one more when the person set to `trusted` companies they do
 * not belong to. Null when the person is gone.
 */
async function fromD1(deps: Deps, me: number, own: Own): Promise<Parts | null> {
  const row = await deps.db.get<Times & { memberOf: string }>(sql`
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
  if (!row || row.user === null) return null;
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
  return {
    user: row.user,
    company: newestOf([row.company, own.companySetting, trustedTimes]),
    coworker: row.coworker,
    secure:
      row.secure_e164 === null
        ? null
        : { country_code: row.secure_country_code!, number: row.secure_number!, e164: row.secure_e164 },
  };
}
