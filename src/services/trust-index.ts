// One file although past 400 lines: the `num:` keys, the SQL that computes them, the work rows that
// make them stale and the applier that writes them (and tells objects their facts) are one contract.
import { sql, type SQL } from "drizzle-orm";
import type { Db } from "../db/client";
import {
  companies,
  companyPhones,
  companyRosters,
  indexWork,
  indexWritten,
  memberships,
  people,
  personPhones,
  secureNumbers,
} from "../db/schema";
import { companyKey, type CompanyRecord } from "../domain/company-records";
import { pruneOlderThan } from "../db/prune";
import { backoffSql, batchableAll, inList } from "../db/sql";
import {
  bucketOf,
  contactBucketKey,
  digestOf,
  INDEX_COMPLETE_KEY,
  NO_HOLDERS,
  NOBODY,
  numberKey,
  receiverKey,
  WRITTEN_TRUSTED_MS,
  type NumberRecord,
  type ReceiverRecord,
} from "../domain/trust-records";
import type { Facts } from "../domain/facts";
import { factsOf, newestOf } from "../db/facts";

export { factsOf };
import { logError } from "../lib/log";
import type { Deps } from "./deps";
import type { PersonObjects } from "./person-objects";
import { computeTokenRecords } from "./token-records";

/**
 * The trust-lookup index (docs/architecture.md, "The trust index"): KV
 * records keyed by the two inputs of the question (src/domain/trust-records.ts),
 * so a warm lookup is one round: one bulk get of three keys.
 *
 * Two writers, one per key:
 * - each person's object writes their `rcv:` and `rcvn:` keys after its own
 *   commit (src/objects/person/index-keys.ts); D1 tells it what it needs of
 *   the platform — their secure number and companies — through `prs:<id>`
 *   work rows, applied here like the keys;
 * - D1's index work writes the `num:` keys (who calls from a number). Writes
 *   record the keys they made stale as `index_work` rows in their own batch
 *   (see `workFor*` and services/outbox.ts); the rows are applied after
 *   commit and retried until KV (or the object) accepts them.
 * A missed key is answered from its source — D1 for `num:`, the person's
 * object for `rcv:`/`rcvn:` — and written again.
 */
/** KV's minimum TTL: a fill that found nothing (most unknown callers) lives this long. */
export const EMPTY_FILL_TTL_SECONDS = 60;
/** One applier per key at a time; longer than any apply takes. */
const LEASE_MS = 30_000;

/** The work key telling person `id`'s object D1's facts about them (their number and companies). */
export const factsKey = (personId: number) => `prs:${personId}`;

export type Defer = (work: Promise<unknown>) => void;
export type IndexDeps = Pick<Deps, "db" | "kv" | "objects">;

/**
 * The records for a lookup: one round of KV reads (the receiver, the caller's
 * number and the receiver's contact bucket for it, together). A missed
 * `num:` key is read from D1 and filled after the answer (through `defer`);
 * a missed receiver (or a bucket its record lists) is asked of the
 * receiver's object, with D1's facts about them read in the same D1 batch,
 * and the object writes its keys again. `bucket` is the caller's bucket
 * value (`""`: no contact has that phone).
 */
export async function readRecords(
  deps: IndexDeps,
  receivingE164: string,
  callerE164: string | null,
  defer: Defer,
): Promise<{ receiver: ReceiverRecord; caller: NumberRecord; bucket: string }> {
  const rcv = receiverKey(receivingE164);
  const num = callerE164 ? numberKey(callerE164) : null;
  const bucketKey = callerE164 ? contactBucketKey(receivingE164, bucketOf(callerE164)) : null;
  const keys = [rcv, ...(num ? [num] : []), ...(bucketKey ? [bucketKey] : []), INDEX_COMPLETE_KEY];
  const found = await safeGetMany(deps.kv, keys);
  const bucketNeeded = (receiver: ReceiverRecord) => callerE164 !== null && receiver.nb.includes(bucketOf(callerE164));
  // A receiver record this version cannot read (written by an older one) counts as missed.
  let receiver = readableReceiver(found.get(rcv) ?? null);
  let bucket = bucketKey && receiver && bucketNeeded(receiver) ? (found.get(bucketKey) ?? null) : "";
  const askObject = receiver === null || bucket === null;
  const numMissed = num !== null && (found.get(num) ?? null) === null;
  // Warm, or the index is complete (an absent key is then the answer: nobody holds the number, no
  // such contact): no D1 statement and no write.
  if ((!askObject && !numMissed) || (found.get(INDEX_COMPLETE_KEY) ?? null) !== null) {
    return {
      receiver: receiver ?? NOBODY,
      caller: numberRecord(num ? found.get(num) : null),
      bucket: (receiver && bucket) || "",
    };
  }
  const [holder, numbers] = await Promise.all([
    askObject ? factsOfNumber(deps.db, receivingE164) : null,
    numMissed ? computeRecords(deps.db, [num!]) : null,
  ]);
  if (numbers) defer(fill(deps, numbers).catch((err: unknown) => logError("trust index fill failed", err)));
  if (askObject) {
    if (holder === null) {
      receiver = NOBODY;
      bucket = "";
      // Nobody holds the number: no object owns the key, so the fill is short-lived.
      defer(safePut(deps.kv, rcv, JSON.stringify(NOBODY), EMPTY_FILL_TTL_SECONDS));
    } else {
      // What KV lacked: the receiver record (or one this version cannot read), and the bucket.
      const missed = [
        ...(receiver === null ? [rcv] : []),
        ...(bucketKey && (found.get(bucketKey) ?? null) === null ? [bucketKey] : []),
      ];
      const asked = await deps.objects
        .of(holder.personId)
        .receiverRecords(holder, callerE164 === null ? null : bucketOf(callerE164), missed);
      receiver = asked.receiver;
      bucket = bucketNeeded(receiver) ? asked.bucket : "";
    }
  }
  return {
    receiver: receiver!,
    caller: numberRecord(num ? (numbers?.get(num) ?? found.get(num)) : null),
    bucket: bucket ?? "",
  };
}

/** A `num:` value as a record; none (an absent key): nobody calls from the number. */
const numberRecord = (value: string | null | undefined): NumberRecord =>
  value ? (JSON.parse(value) as NumberRecord) : NO_HOLDERS;

function readableReceiver(value: string | null): ReceiverRecord | null {
  if (value === null) return null;
  try {
    const record = JSON.parse(value) as ReceiverRecord;
    return Array.isArray(record.nb) ? record : null;
  } catch {
    return null;
  }
}

/** D1's facts about the holder of secure number `e164` (null: nobody holds it), in one batch. */
async function factsOfNumber(db: Db, e164: string): Promise<Facts | null> {
  const [holders, companies] = await db.batch([
    db
      .select({
        personId: secureNumbers.personId,
        version: people.factsVersion,
        countryCode: secureNumbers.countryCode,
        number: secureNumbers.number,
        userAt: people.updatedAt,
      })
      .from(secureNumbers)
      .innerJoin(people, sql`${people.id} = ${secureNumbers.personId}`)
      .where(sql`${secureNumbers.e164} = ${e164}`),
    db
      .select({ id: memberships.companyId, at: memberships.updatedAt })
      .from(memberships)
      .where(sql`${memberships.personId} = (select person_id from ${secureNumbers} where e164 = ${e164})`),
  ]);
  const holder = holders[0];
  if (!holder?.personId) return null;
  return {
    personId: holder.personId,
    e164,
    companies: companies.map((row) => row.id),
    version: holder.version,
    countryCode: holder.countryCode,
    number: holder.number,
    userAt: holder.userAt.getTime(),
    membershipAt: newestOf(companies.map((row) => row.at.getTime())),
  };
}

/**
 * Fills missed `num:` keys. An empty record is put directly with a short TTL
 * (a race with a write can leave it stale for at most that long); a record
 * with content goes through the index work, so no older value can overwrite
 * a newer one, and keeps the long TTL.
 */
async function fill(deps: IndexDeps, computed: Map<string, string>) {
  const now = new Date();
  const empty = [...computed].filter(([, value]) => value === EMPTY_NUMBER);
  const full = [...computed].filter(([, value]) => value !== EMPTY_NUMBER).map(([key]) => key);
  await Promise.all(empty.map(([key, value]) => safePut(deps.kv, key, value, EMPTY_FILL_TTL_SECONDS)));
  if (full.length > 0) {
    await deps.db.batch([workForKeys(deps.db, full, now)]);
    // KV lacks these keys whatever the digests say (expired, or never put): put them.
    await applyIndexWork(deps, { keys: full, now, force: true });
  }
}

const EMPTY_NUMBER = JSON.stringify(NO_HOLDERS);
const enabledCompany = sql`${companyPhones.companyId} in (select id from companies where status = 'enabled')`;

/**
 * The `num:` records of `keys` as D1 has them now, in one batch of reads
 * whatever the number of keys (each list bound as one JSON value).
 */
export async function computeRecords(db: Db, keys: string[]): Promise<Map<string, string>> {
  const calling = keys.filter((key) => key.startsWith("num:")).map((key) => key.slice(4));
  if (calling.length === 0) return new Map();
  const [phoneHolders, secureHolders, companyHolders] = await db.batch([
    db
      .selectDistinct({ e164: personPhones.e164, id: personPhones.personId })
      .from(personPhones)
      // Only a phone its holder confirmed carries the trust others gave them (docs/decisions.md).
      .where(sql`${inList(personPhones.e164, calling)} and ${personPhones.confirmed} = 1`),
    db
      .select({ e164: secureNumbers.e164, id: secureNumbers.personId })
      .from(secureNumbers)
      .where(sql`${inList(secureNumbers.e164, calling)} and ${secureNumbers.personId} is not null`),
    db
      .selectDistinct({ e164: companyPhones.e164, id: companyPhones.companyId })
      .from(companyPhones)
      // Only a phone the operator verified names its company, and only while that company is enabled (docs/decisions.md).
      .where(
        sql`${inList(companyPhones.e164, calling)} and ${companyPhones.status} = 'verified' and ${enabledCompany}`,
      ),
  ]);
  const sorted = (values: number[]) => [...new Set(values)].sort((a, b) => a - b);
  const records = new Map<string, string>();
  for (const e164 of calling) {
    const people = [...phoneHolders, ...secureHolders].filter((row) => row.e164 === e164).map((row) => row.id!);
    const record: NumberRecord = {
      p: sorted(people),
      c: sorted(companyHolders.filter((row) => row.e164 === e164).map((row) => row.id)),
    };
    records.set(numberKey(e164), JSON.stringify(record));
  }
  return records;
}

/**
 * The `co:` records of `keys` as D1 has them now (domain/company-records.ts), in one read; a
 * company that no longer exists has none (its key is deleted).
 */
export async function computeCompanyRecords(db: Db, keys: string[]): Promise<Map<string, string | null>> {
  const ids = keys.filter((key) => key.startsWith("co:")).map((key) => Number(key.slice(3)));
  if (ids.length === 0) return new Map();
  const rows = await db
    .select({
      id: companies.id,
      u: companies.updatedAt,
      f: companyRosters.firstPersonId,
      a: companyRosters.firstAt,
      b: companyRosters.secondAt,
    })
    .from(companies)
    .leftJoin(companyRosters, sql`${companyRosters.companyId} = ${companies.id}`)
    .where(inList(companies.id, ids))
    .all();
  const records = new Map<string, string | null>(keys.filter((key) => key.startsWith("co:")).map((key) => [key, null]));
  for (const row of rows) {
    const record: CompanyRecord = { u: row.u.getTime(), f: row.f, a: row.a, b: row.b };
    records.set(companyKey(row.id), JSON.stringify(record));
  }
  return records;
}

/* ---------- index work: statements a write adds to its own batch ---------- */

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

/** The heartbeat's record of the company (its row or its roster changed). */
export const workForCompany = (db: Db, companyId: number, now: Date) =>
  upsertWork(db, sql`select ${companyKey(companyId)} as k`, now);

/** The heartbeat's records of every company the person belongs to at this point of the batch. */
export const workForCompaniesOf = (db: Db, personId: number | SQL, now: Date) =>
  upsertWork(db, sql`select distinct 'co:' || company_id as k from ${memberships} where person_id = ${personId}`, now);

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

/* ---------- applying the work ---------- */

/**
 * `applied`: keys done (put, or `unchanged`: KV already holds that value);
 * `busy`: keys another applier holds right now (it may have read D1 before
 * the latest write).
 */
export type ApplyResult = { applied: string[]; unchanged: string[]; failed: string[]; busy: string[] };

/**
 * Applies index work: claims the keys (a lease, so one applier per key),
 * reads their records from D1 *after* claiming, puts in KV those whose value
 * differs from the one last put (`index_written`; `force`: put all, for keys
 * KV lacks), tells each `prs:` person's object D1's facts about them, and
 * deletes each row only if no write bumped its version meanwhile (else it
 * stays due and is applied again). A refused KV write or an object that did
 * not answer leaves the row due after a short backoff: it is retried, never
 * papered over with a delete. A `rcv:`/`rcvn:` row left by an older version
 * is done at once: those keys are the objects' now.
 *
 * `keys`: those keys (after a commit); else the oldest due rows, at most
 * `limit` (the sweep). Cost in D1: 1 claim; in one round, for `num:` keys
 * a read batch (3 reads) and their last digests (shared with `co:` keys), for `tok:` keys 1 read,
 * for `co:` keys (the heartbeat's company records) 1 read, for `prs:` keys the people's facts
 * (3 reads, then one RPC per object); 1 write batch (4 statements) — at most 14 statements. At most one KV put per key, so
 * `limit` bounds the KV operations and the object calls.
 */
export async function applyIndexWork(
  { db, kv, objects }: IndexDeps,
  {
    keys,
    now = new Date(),
    limit = 200,
    force = false,
  }: { keys?: string[]; now?: Date; limit?: number; force?: boolean },
): Promise<ApplyResult> {
  if (keys && keys.length === 0) return { applied: [], unchanged: [], failed: [], busy: [] };
  const lease = crypto.randomUUID();
  const t = now.getTime();
  const chosen = keys
    ? sql`select key from ${indexWork} where ${inList(indexWork.key, keys)}`
    : sql`select key from ${indexWork} where due_at <= ${t} order by due_at limit ${limit}`;
  const claimed = await db.all<{ key: string; version: number }>(sql`
    update ${indexWork} set lease_id = ${lease}, lease_until = ${t + LEASE_MS}, attempts = attempts + 1
    where key in (${chosen}) and (lease_until is null or lease_until < ${t})
    returning key, version`);
  const busyOf = (claimedKeys: string[]) => (keys ?? []).filter((key) => !claimedKeys.includes(key));
  if (claimed.length === 0) return { applied: [], unchanged: [], failed: [], busy: busyOf([]) };

  const claimedKeys = claimed.map((row) => row.key);
  const people = claimedKeys.filter((key) => key.startsWith("prs:")).map((key) => Number(key.slice(4)));
  // Only `num:` keys are put in KV here (their digests in `index_written`); `prs:` work tells objects.
  const numberKeys = claimedKeys.filter((key) => key.startsWith("num:"));
  // `tok:` keys: token verification records (services/token-records.ts), put without a TTL.
  const tokenKeys = claimedKeys.filter((key) => key.startsWith("tok:"));
  // `co:` keys: the heartbeat's company records (domain/company-records.ts), put like `num:` keys.
  const companyKeys = claimedKeys.filter((key) => key.startsWith("co:"));
  const digested = [...numberKeys, ...companyKeys];
  const [records, written, told, tokens, companyRecords] = await Promise.all([
    computeRecords(db, numberKeys),
    force || digested.length === 0
      ? []
      : db
          .select({ key: indexWritten.key, digest: indexWritten.digest })
          .from(indexWritten)
          .where(sql`${inList(indexWritten.key, digested)} and ${indexWritten.writtenAt} > ${t - WRITTEN_TRUSTED_MS}`)
          .all(),
    people.length > 0 ? tellObjects(db, objects, people) : new Set<number>(),
    computeTokenRecords(db, tokenKeys, now),
    computeCompanyRecords(db, companyKeys),
  ]);
  const lastPut = new Map(written.map((row) => [row.key, row.digest]));
  const outcomes = await Promise.all(
    claimed.map(async (row) => {
      if (row.key.startsWith("prs:")) return { ...row, digest: "", ok: told.has(Number(row.key.slice(4))), put: false };
      const token = tokens.get(row.key);
      if (token !== undefined) return { ...row, digest: "", ok: await safePut(kv, row.key, token), put: false };
      const company = companyRecords.get(row.key);
      // A company that no longer exists: its record goes (no index_written row is kept for it).
      if (company === null) return { ...row, digest: "", ok: await safeDelete(kv, row.key), put: false };
      const value = company ?? records.get(row.key);
      // A receiver or bucket key of an older version: its person's object owns it now.
      if (value === undefined) return { ...row, digest: "", ok: true, put: false };
      const digest = await digestOf(value);
      // KV holds this very value (put by an earlier apply, within its TTL): nothing to write.
      if (lastPut.get(row.key) === digest) return { ...row, digest, ok: true, put: false };
      // Nobody calls from it any more: the key goes (absent reads as "nobody").
      if (value === EMPTY_NUMBER) return { ...row, digest, ok: await safeDelete(kv, row.key), put: true };
      return { ...row, digest, ok: await safePut(kv, row.key, value), put: true };
    }),
  );
  const applied = outcomes.filter((row) => row.ok);
  const failed = outcomes.filter((row) => !row.ok).map((row) => row.key);
  const put = applied.filter((row) => row.put);
  await db.batch([
    // What KV now holds, recorded while the lease is still ours (a late applier records nothing).
    batchableAll(
      db,
      sql`
      insert into ${indexWritten} (key, digest, written_at)
      select json_extract(j.value, '$[0]'), json_extract(j.value, '$[1]'), ${t}
      from json_each(${JSON.stringify(put.map((row) => [row.key, row.digest]))}) j
      where exists (select 1 from ${indexWork} w where w.key = json_extract(j.value, '$[0]') and w.lease_id = ${lease})
      on conflict (key) do update set digest = excluded.digest, written_at = excluded.written_at`,
    ),
    batchableAll(
      db,
      sql`
      delete from ${indexWork} where lease_id = ${lease} and exists (
        select 1 from json_each(${JSON.stringify(applied.map((row) => [row.key, row.version]))}) j
        where json_extract(j.value, '$[0]') = index_work.key and json_extract(j.value, '$[1]') = index_work.version)`,
    ),
    // Refused: due again after a backoff that grows with the attempts (1 s, 2 s, 4 s … at most 60 s).
    batchableAll(
      db,
      sql`
      update ${indexWork} set due_at = ${t} + ${backoffSql(sql`attempts - 1`, { base: 1000, cap: 60_000 })}
      where lease_id = ${lease} and ${inList(indexWork.key, failed)}`,
    ),
    batchableAll(db, sql`update ${indexWork} set lease_id = null, lease_until = null where lease_id = ${lease}`),
  ]);
  return {
    applied: applied.map((row) => row.key),
    unchanged: applied.filter((row) => !row.put).map((row) => row.key),
    failed,
    busy: busyOf(claimedKeys),
  };
}

/** Tells these people's objects D1's facts about them; answers those that took them (a failure is logged). */
async function tellObjects(db: Db, objects: PersonObjects, personIds: number[]): Promise<Set<number>> {
  const told = new Set<number>();
  await Promise.all(
    (await factsOf(db, personIds)).map(async (facts) => {
      try {
        await objects.of(facts.personId).takeFacts(facts);
        told.add(facts.personId);
      } catch (err) {
        logError("telling a person's object its facts failed; retried later", err, { personId: facts.personId });
      }
    }),
  );
  return told;
}

/** Reads `keys` in one KV operation (a bulk get); a failed read counts as a miss for each key (D1 decides). */
async function safeGetMany(kv: KVNamespace, keys: string[]): Promise<Map<string, string | null>> {
  try {
    return await kv.get(keys, "text");
  } catch (err) {
    logError("trust index read failed", err, { keys: keys.join(",") });
    return new Map();
  }
}

/**
 * A retention rule (daily): digests older than the record's TTL say nothing
 * any more (KV no longer holds that value), so they go.
 */
export const pruneIndexWritten = (db: Db, now: Date, { maxStatements }: { maxStatements: number }) =>
  pruneOlderThan(db, {
    table: indexWritten,
    column: indexWritten.writtenAt,
    cutoff: new Date(now.getTime() - WRITTEN_TRUSTED_MS),
    maxStatements,
  });

/**
 * KV allows one write per second per key; a refused write is reported, never thrown. Without a TTL
 * the record stays until a write changes it; a fill before the index is complete is short-lived.
 */
async function safePut(kv: KVNamespace, key: string, value: string, ttlSeconds?: number): Promise<boolean> {
  try {
    await kv.put(key, value, ttlSeconds === undefined ? {} : { expirationTtl: ttlSeconds });
    return true;
  } catch (err) {
    logError("trust index write refused; retried later", err, { key });
    return false;
  }
}

async function safeDelete(kv: KVNamespace, key: string): Promise<boolean> {
  try {
    await kv.delete(key);
    return true;
  } catch (err) {
    logError("trust index delete refused; retried later", err, { key });
    return false;
  }
}
