import { sql, type SQL } from "drizzle-orm";
import type { Db } from "../../db/client";
import {
  accessTokens,
  companyPhones,
  indexWork,
  memberships,
  personEmails,
  personPhones,
  secureNumbers,
} from "../../db/schema";
import { batchableAll } from "../../db/sql";
import { KEY_KINDS, type KindName } from "../../domain/key-kinds";

/*
 * Marking keys stale (docs/architecture.md, "Index work"): the statements a
 * write adds to its own batch to record the KV keys it makes stale, as
 * `index_work` rows that `makeCurrent` (./current.ts) makes current after the
 * commit. Every key is built by its kind's SQL (domain/key-kinds.ts).
 */

/** SQL building kind `name`'s key from `column` (a column name or an SQL expression). */
const keyOf = (name: KindName, column: string) => sql.raw(KEY_KINDS[name].sql(column));

/**
 * `insert … select <key> … on conflict bump`: records (or re-records) that
 * the keys the select yields are stale. The `where true` is SQLite's rule for
 * an upsert after a select (https://sqlite.org/lang_upsert.html, "parsing
 * ambiguity"). Returns the keys, so the command makes them current after commit.
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
export const markStalePerson = (db: Db, personId: number | SQL, now: Date) =>
  upsertWork(db, sql`select ${keyOf("prs", "")}${personId} as k`, now);

/** `markStalePerson`, only if the person holds a secure number at this point of the batch. */
export const markStalePersonIfNumbered = (db: Db, personId: number, now: Date) =>
  upsertWork(
    db,
    sql`select ${keyOf("prs", "person_id")} as k from ${secureNumbers} where person_id = ${personId}`,
    now,
  );

/** The heartbeat's record of the company (its row or its roster changed). */
export const markStaleCompany = (db: Db, companyId: number, now: Date) =>
  upsertWork(db, sql`select ${KEY_KINDS.co.key(companyId)} as k`, now);

/** The heartbeat's records of every company the person belongs to at this point of the batch. */
export const markStaleCompaniesOf = (db: Db, personId: number | SQL, now: Date) =>
  upsertWork(
    db,
    sql`select distinct ${keyOf("co", "company_id")} as k from ${memberships} where person_id = ${personId}`,
    now,
  );

/**
 * The owner records (`eml:`, ./contacts.ts) of every email the person holds now. Put it before
 * *and* after a change of their emails, so both the old and the new ones are rewritten right after
 * the commit (D1's triggers queue them too, drizzle/0030, for the minute sweep).
 */
export const markStaleEmailsOf = (db: Db, personId: number | SQL, now: Date) =>
  upsertWork(db, sql`select ${keyOf("eml", "email")} as k from ${personEmails} where person_id = ${personId}`, now);

/**
 * What a contact's link shows of the person (`lnk:`, ./contacts.ts): their avatar, risk score,
 * encryption ids or companies changed. D1's triggers queue the same work (drizzle/0030);
 * recording it here makes it current right after the commit.
 */
export const markStaleLinkCard = (db: Db, personId: number, now: Date) =>
  upsertWork(db, sql`select ${KEY_KINDS.lnk.key(personId)} as k`, now);

/** The caller records of these numbers. */
export const markStaleNumbers = (db: Db, e164s: string[], now: Date) =>
  upsertWork(db, sql`select distinct ${keyOf("num", "value")} as k from json_each(${JSON.stringify(e164s)})`, now);

/**
 * The caller records of every number the person holds now (personal phones
 * and secure number). Put it before *and* after a change of their phones,
 * so both the old and the new numbers are rewritten. (Their emails' `eml:`
 * records follow by D1's triggers, drizzle/0030.)
 */
export const markStaleNumbersOf = (db: Db, personId: number | SQL, now: Date) =>
  upsertWork(
    db,
    sql`select ${keyOf("num", "e164")} as k from ${personPhones} where person_id = ${personId}
        union select ${keyOf("num", "e164")} from ${secureNumbers} where person_id = ${personId}`,
    now,
  );

/** The caller records of every phone of the company (it was disabled or enabled). */
export const markStaleNumbersOfCompany = (db: Db, companyId: number, now: Date) =>
  upsertWork(
    db,
    sql`select distinct ${keyOf("num", "e164")} as k from ${companyPhones} where company_id = ${companyId}`,
    now,
  );

/** Any keys (a fill, the rebuild, a test). */
export const markStale = (db: Db, keys: string[], now: Date) =>
  upsertWork(db, sql`select distinct value as k from json_each(${JSON.stringify(keys)})`, now);

/**
 * The verification records (`tok:` keys, services/token-records.ts) of the
 * person's tokens, when `condition` holds at this point of the batch (their
 * account is about to go): rewritten as refused after the commit.
 */
export const markStaleTokensOf = (db: Db, personId: number, condition: SQL, now: Date) =>
  markStaleTokensWhere(db, sql`person_id = ${personId} and ${condition}`, now);

/**
 * The verification records of the tokens D1 holds where `condition` holds: a hash D1 does not hold
 * marks nothing (a made-up token must not leave a record in KV).
 */
export const markStaleTokensWhere = (db: Db, condition: SQL, now: Date) =>
  upsertWork(db, sql`select ${keyOf("tok", "token_hash")} as k from ${accessTokens} where ${condition}`, now);
