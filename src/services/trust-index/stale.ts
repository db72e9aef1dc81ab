import { sql, type SQL } from "drizzle-orm";
import type { Db } from "../db/client";
import { companyPhones, indexWork, memberships, personPhones, secureNumbers } from "../db/schema";
import { companyKey } from "../domain/company-records";
import { batchableAll } from "../db/sql";

/*
 * Index work (docs/architecture.md, "Index work"): the statements a write adds
 * to its own batch to record the KV keys it makes stale, as `index_work` rows
 * that services/index-apply.ts applies after the commit.
 */

/** The work key telling person `id`'s object D1's facts about them (their number and companies). */
export const factsKey = (personId: number) => `prs:${personId}`;

/**
 * `insert … select <key> … on conflict bump`: records (or re-records) that
 * the keys the select yields are stale. The `where true` is SQLite's rule for
 * an upsert after a select (https://sqlite.org/lang_upsert.html, "parsing
 * ambiguity"). Returns the keys, so the command applies them after commit.
 */
function upsertWork(db: Db, keys: SQL, now: Date) {
  return batchableAll<{ key: string }>(
    db,
    sql`
    insert into ${indexWork} (key, version, attempts, due_at, created_at)
    select k, 1, 0, ${now.getTime()}, ${now.getTime()} from (${keys}) where true
    on conflict (key) do update set version = version + 1, due_at = excluded.due_at
    returning key`,
  );
}

/**
 * The person's object is told D1's facts about them again (their secure
 * number and companies): after their number or a membership changed. The
 * object rewrites its `rcv:`/`rcvn:` keys from them.
 */
export const workForPerson = (db: Db, personId: number | SQL, now: Date) =>
  upsertWork(db, sql`select 'prs:' || ${personId} as k`, now);

/** `workForPerson`, only if the person holds a secure number at this point of the batch. */
export const workForPersonIfNumbered = (db: Db, personId: number, now: Date) =>
  upsertWork(db, sql`select 'prs:' || person_id as k from ${secureNumbers} where person_id = ${personId}`, now);

/** The heartbeat's record of the company (its row or its roster changed). */
export const workForCompany = (db: Db, companyId: number, now: Date) =>
  upsertWork(db, sql`select ${companyKey(companyId)} as k`, now);

/** The heartbeat's records of every company the person belongs to at this point of the batch. */
export const workForCompaniesOf = (db: Db, personId: number | SQL, now: Date) =>
  upsertWork(db, sql`select distinct 'co:' || company_id as k from ${memberships} where person_id = ${personId}`, now);

/** The caller records of these numbers. */
export const workForNumbers = (db: Db, e164s: string[], now: Date) =>
  upsertWork(db, sql`select distinct 'num:' || value as k from json_each(${JSON.stringify(e164s)})`, now);

/**
 * The caller records of every number the person holds now (personal phones
 * and secure number). Put it before *and* after a change of their phones,
 * so both the old and the new numbers are rewritten.
 */
export const workForNumbersOf = (db: Db, personId: number | SQL, now: Date) =>
  upsertWork(
    db,
    sql`select 'num:' || e164 as k from ${personPhones} where person_id = ${personId}
        union select 'num:' || e164 from ${secureNumbers} where person_id = ${personId}`,
    now,
  );

/** The caller records of every phone of the company (it was disabled or enabled). */
export const workForNumbersOfCompany = (db: Db, companyId: number, now: Date) =>
  upsertWork(db, sql`select distinct 'num:' || e164 as k from ${companyPhones} where company_id = ${companyId}`, now);

/** Any keys (a fill, a test). */
export const workForKeys = (db: Db, keys: string[], now: Date) =>
  upsertWork(db, sql`select distinct value as k from json_each(${JSON.stringify(keys)})`, now);

/**
 * The verification records (`tok:` keys, services/token-records.ts) of the
 * person's tokens, when `condition` holds at this point of the batch (their
 * account is about to go): rewritten as refused after the commit.
 */
export const workForTokensOf = (db: Db, personId: number, condition: SQL, now: Date) =>
  upsertWork(
    db,
    sql`select 'tok:' || token_hash as k from access_tokens where person_id = ${personId} and ${condition}`,
    now,
  );
