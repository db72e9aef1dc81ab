// One file although past 400 lines: the KV keys, their record shapes, the SQL that computes them and the
// applier that writes them are one contract (a record changes in all four places at once).
import { sql, type SQL } from "drizzle-orm";
import type { SQLiteColumn } from "drizzle-orm/sqlite-core";
import type { Db } from "../db/client";
import {
  contactPhones,
  contacts,
  companyPhones,
  companyTrust,
  indexWork,
  indexWritten,
  memberships,
  personPhones,
  personTrust,
  secureNumbers,
} from "../db/schema";
import { pruneOlderThan } from "../db/prune";
import { batchableAll, inList } from "../db/sql";
import { groupBy } from "../lib/group";
import { logError } from "../lib/log";

/**
 * The trust-lookup index (docs/architecture.md, "The trust index"). KV holds
 * records keyed by the two inputs of the question, so a warm lookup is one
 * round: one bulk get of the three keys below.
 *
 * - `rcv:<e164>`: the receiver holding secure number e164: who they are and
 *   their trust inputs (people and companies they trust or distrust, their
 *   memberships, which contact-phone buckets are not empty). Rewritten when
 *   *their* inputs change.
 * - `rcvn:<e164>:<dd>`: that receiver's contact phones ending in the two
 *   digits dd (one of 100 buckets), read in the same round as the other two
 *   for the caller's dd: a lookup reads a bucket, never the whole contact
 *   list, so its cost does not grow with the receiver's 10,000 contacts.
 * - `num:<e164>`: who calls from e164: the people holding it (personal phone
 *   or secure number) and the companies calling from it. Rewritten when that
 *   number changes hands.
 *
 * The decision joins the two (`decide`). No write rewrites anyone else's
 * record: a company phone change touches one `num:` key whatever the size
 * of the company, a person's new phone touches that number's key, not the
 * records of everyone who trusts them.
 *
 * D1 is the truth. Writes record the keys they made stale as `index_work`
 * rows in their own batch (see `workFor*` and services/outbox.ts); the rows
 * are applied after commit and retried until KV accepts them. A missed key
 * is answered from D1 and filled.
 */
export const RECORD_TTL_SECONDS = 24 * 3600;
/** KV's minimum TTL: a fill that found nothing (most unknown callers) lives this long. */
export const EMPTY_FILL_TTL_SECONDS = 60;
/** One applier per key at a time; longer than any apply takes. */
const LEASE_MS = 30_000;

export const receiverKey = (e164: string) => `rcv:${e164}`;
export const numberKey = (e164: string) => `num:${e164}`;
/** The bucket of a number: its last two digits, as a number 0–99. */
export const bucketOf = (e164: string) => Number(e164.slice(-2));
export const contactBucketKey = (receivingE164: string, bucket: number) =>
  `rcvn:${receivingE164}:${String(bucket).padStart(2, "0")}`;
/** The same two, in SQL: a phone column's bucket, and the bucket key of (secure number, phone) columns. */
const lastTwoDigits = (phone: SQL | SQLiteColumn) => sql`substr(${phone}, -2)`;
const bucketOfSql = (phone: SQL | SQLiteColumn) => sql<number>`cast(${lastTwoDigits(phone)} as integer)`;
const contactBucketKeySql = (secure: SQL | SQLiteColumn, phone: SQL | SQLiteColumn) =>
  sql<string>`'rcvn:' || ${secure} || ':' || ${lastTwoDigits(phone)}`;

/** The receiver record: `p` = person id (0: nobody holds the number). */
export type ReceiverRecord = {
  p: number;
  /**
   * The buckets (last two digits, 0–99) holding at least one of their
   * contacts' phones; the phones themselves are in the `rcvn:` keys.
   */
  nb: number[];
  /** People they trusted (`trusted = 1`). */
  tp: number[];
  /** Companies they belong to. */
  c: number[];
  /** Companies they set to `trusted` / `negative`. */
  tc: number[];
  nc: number[];
};

/** Who calls from a number: people holding it (phone or secure number) and companies with it as a phone. */
export type NumberRecord = { p: number[]; c: number[] };

const NOBODY: ReceiverRecord = { p: 0, nb: [], tp: [], c: [], tc: [], nc: [] };
const NO_HOLDERS: NumberRecord = { p: [], c: [] };

/**
 * Who is trusted (docs/decisions.md, "Who is trusted"): the receiver trusts
 * the caller's number when it is a contact's phone, a phone or secure number
 * of a person they trusted, or a phone of a company they belong to or set to
 * `trusted`, unless they set that company to `negative`.
 */
export function decide(receiver: ReceiverRecord, callerE164: string, caller: NumberRecord, bucket: string): boolean {
  if (receiver.p === 0) return false;
  if (hasContactPhone(bucket, callerE164)) return true;
  if (caller.p.some((id) => receiver.tp.includes(id))) return true;
  return caller.c.some((id) => !receiver.nc.includes(id) && (receiver.c.includes(id) || receiver.tc.includes(id)));
}

/**
 * A bucket's value: its phones, sorted, with a comma before and after each
 * (`",+14155550100,+442071838700,"`; `""` for none), searched in one pass.
 */
const contactPhoneList = (phones: string[]) => (phones.length === 0 ? "" : `,${phones.join(",")},`);

/** Whether `e164` is one of the phones of a bucket (its `rcvn:` value). */
export const hasContactPhone = (bucket: string, e164: string) => bucket.includes(`,${e164},`);

export type Defer = (work: Promise<unknown>) => void;
export type IndexDeps = { db: Db; kv: KVNamespace };

/**
 * The records for a lookup: one round of KV reads (the receiver, the caller's
 * number and the receiver's contact bucket for it, together); missed keys are
 * read from D1 in one batch and filled after the answer (through `defer`). A
 * bucket the receiver record marks empty is not read from D1 when missed.
 * `bucket` is the caller's bucket value (`""`: no contact has that phone).
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
  const keys = [rcv, ...(num ? [num] : []), ...(bucketKey ? [bucketKey] : [])];
  const found = await safeGetMany(deps.kv, keys);
  // A receiver record this version cannot read (written by an older one) counts as missed.
  const cachedReceiver = readableReceiver(found.get(rcv) ?? null);
  if (cachedReceiver === null) found.delete(rcv);
  const bucketNeeded = (receiver: ReceiverRecord) => callerE164 !== null && receiver.nb.includes(bucketOf(callerE164));
  const missed = keys.filter(
    (key) =>
      (found.get(key) ?? null) === null &&
      // A missed bucket the receiver record marks empty needs no D1 read.
      !(key === bucketKey && cachedReceiver !== null && !bucketNeeded(cachedReceiver)),
  );
  const computed = missed.length > 0 ? await computeRecords(deps.db, missed) : new Map<string, string>();
  if (missed.length > 0) defer(fill(deps, computed).catch((err: unknown) => logError("trust index fill failed", err)));
  const value = (key: string) => found.get(key) ?? computed.get(key) ?? null;
  const receiver = cachedReceiver ?? (JSON.parse(computed.get(rcv)!) as ReceiverRecord);
  return {
    receiver,
    caller: num ? (JSON.parse(value(num)!) as NumberRecord) : NO_HOLDERS,
    bucket: bucketKey && bucketNeeded(receiver) ? (value(bucketKey) ?? "") : "",
  };
}

function readableReceiver(value: string | null): ReceiverRecord | null {
  if (value === null) return null;
  try {
    const record = JSON.parse(value) as ReceiverRecord;
    return Array.isArray(record.nb) ? record : null;
  } catch {
    return null;
  }
}

/**
 * Fills missed keys. An empty record is put directly with a short TTL (a
 * race with a write can leave it stale for at most that long); a record with
 * content goes through the index work, so no older value can overwrite a
 * newer one, and keeps the long TTL.
 */
async function fill(deps: IndexDeps, computed: Map<string, string>) {
  const now = new Date();
  const isEmpty = ([key, value]: [string, string]) => value === EMPTY_VALUE[key.slice(0, key.indexOf(":"))];
  const empty = [...computed].filter(isEmpty);
  const full = [...computed].filter((entry) => !isEmpty(entry)).map(([key]) => key);
  await Promise.all(empty.map(([key, value]) => safePut(deps.kv, key, value, EMPTY_FILL_TTL_SECONDS)));
  if (full.length > 0) {
    await deps.db.batch([workForKeys(deps.db, full, now)]);
    // KV lacks these keys whatever the digests say (expired, or never put): put them.
    await applyIndexWork(deps, { keys: full, now, force: true });
  }
}

const EMPTY_VALUE: Record<string, string | undefined> & { rcv: string } = {
  rcv: JSON.stringify(NOBODY),
  num: JSON.stringify(NO_HOLDERS),
  rcvn: "",
};

/**
 * The records of `keys` as D1 has them now, in one batch of reads whatever
 * the number of keys (each list bound as one JSON value).
 */
export async function computeRecords(db: Db, keys: string[]): Promise<Map<string, string>> {
  const receiving = keys.filter((key) => key.startsWith("rcv:")).map((key) => key.slice(4));
  const calling = keys.filter((key) => key.startsWith("num:")).map((key) => key.slice(4));
  const buckets = keys.filter((key) => key.startsWith("rcvn:"));
  /** The secure numbers of the bucket keys (`rcvn:<e164>:<dd>`). */
  const bucketReceivers = [...new Set(buckets.map((key) => key.slice(5, key.lastIndexOf(":"))))];
  const receiverIds = sql`(select ${secureNumbers.personId} from ${secureNumbers} where ${inList(secureNumbers.e164, receiving)})`;
  const bucketKeyOfPhone = contactBucketKeySql(secureNumbers.e164, contactPhones.e164);
  const [
    holders,
    contactBuckets,
    trusted,
    member,
    settings,
    phoneHolders,
    secureHolders,
    companyHolders,
    bucketPhones,
  ] = await db.batch([
    db
      .select({ e164: secureNumbers.e164, personId: secureNumbers.personId })
      .from(secureNumbers)
      .where(inList(secureNumbers.e164, receiving)),
    db
      .selectDistinct({ personId: contacts.ownerId, bucket: bucketOfSql(contactPhones.e164) })
      .from(contactPhones)
      .innerJoin(contacts, sql`${contacts.id} = ${contactPhones.contactId}`)
      .where(sql`${contacts.ownerId} in ${receiverIds}`),
    db
      .select({ personId: personTrust.personId, id: personTrust.trustedPersonId })
      .from(personTrust)
      .where(sql`${personTrust.personId} in ${receiverIds} and ${personTrust.trusted} = 1`),
    db
      .select({ personId: memberships.personId, id: memberships.companyId })
      .from(memberships)
      .where(sql`${memberships.personId} in ${receiverIds}`),
    db
      .select({ personId: companyTrust.personId, id: companyTrust.companyId, trust: companyTrust.trust })
      .from(companyTrust)
      .where(sql`${companyTrust.personId} in ${receiverIds}`),
    db
      .selectDistinct({ e164: personPhones.e164, id: personPhones.personId })
      .from(personPhones)
      .where(inList(personPhones.e164, calling)),
    db
      .select({ e164: secureNumbers.e164, id: secureNumbers.personId })
      .from(secureNumbers)
      .where(sql`${inList(secureNumbers.e164, calling)} and ${secureNumbers.personId} is not null`),
    db
      .selectDistinct({ e164: companyPhones.e164, id: companyPhones.companyId })
      .from(companyPhones)
      // Only a phone the operator verified names its company (docs/decisions.md).
      .where(sql`${inList(companyPhones.e164, calling)} and ${companyPhones.status} = 'verified'`),
    db
      .selectDistinct({ key: bucketKeyOfPhone, e164: contactPhones.e164 })
      .from(contactPhones)
      .innerJoin(contacts, sql`${contacts.id} = ${contactPhones.contactId}`)
      .innerJoin(secureNumbers, sql`${secureNumbers.personId} = ${contacts.ownerId}`)
      .where(sql`${inList(secureNumbers.e164, bucketReceivers)} and ${inList(bucketKeyOfPhone, buckets)}`),
  ]);
  const byPerson = <T extends { personId: number }>(rows: T[]) => groupBy(rows, (row) => row.personId);
  const sorted = <T extends string | number>(values: T[]) => [...new Set(values)].sort();
  const bucketsOf = byPerson(contactBuckets);
  const trustedOf = byPerson(trusted);
  const memberOf = byPerson(member);
  const settingsOf = byPerson(settings);
  const records = new Map<string, string>();
  for (const e164 of receiving) {
    const personId = holders.find((row) => row.e164 === e164)?.personId ?? null;
    if (personId === null) {
      records.set(receiverKey(e164), EMPTY_VALUE.rcv);
      continue;
    }
    const own = settingsOf.get(personId) ?? [];
    const record: ReceiverRecord = {
      p: personId,
      nb: (bucketsOf.get(personId) ?? []).map((row) => Number(row.bucket)).sort((a, b) => a - b),
      tp: sorted((trustedOf.get(personId) ?? []).map((row) => row.id)),
      c: sorted((memberOf.get(personId) ?? []).map((row) => row.id)),
      tc: sorted(own.filter((row) => row.trust === "trusted").map((row) => row.id)),
      nc: sorted(own.filter((row) => row.trust === "negative").map((row) => row.id)),
    };
    records.set(receiverKey(e164), JSON.stringify(record));
  }
  for (const e164 of calling) {
    const people = [...phoneHolders, ...secureHolders].filter((row) => row.e164 === e164).map((row) => row.id!);
    const record: NumberRecord = {
      p: sorted(people),
      c: sorted(companyHolders.filter((row) => row.e164 === e164).map((row) => row.id)),
    };
    records.set(numberKey(e164), JSON.stringify(record));
  }
  for (const key of buckets) {
    const phones = bucketPhones.filter((row) => row.key === key).map((row) => row.e164);
    records.set(key, contactPhoneList(sorted(phones)));
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

/** The receiver record of the person (through their secure number, if they hold one). */
export const workForReceiver = (db: Db, personId: number | SQL, now: Date) =>
  upsertWork(db, sql`select 'rcv:' || e164 as k from ${secureNumbers} where person_id = ${personId}`, now);

/**
 * The receiver's contact-phone buckets that hold a phone now. A bucket
 * emptied by the write is not rewritten: the receiver record (rewritten by
 * the same write) no longer lists it, so lookups do not read it.
 */
export const workForContactBuckets = (db: Db, personId: number | SQL, now: Date) =>
  upsertWork(
    db,
    sql`select distinct ${contactBucketKeySql(sql`sn.e164`, sql`cp.e164`)} as k
        from ${contactPhones} cp join ${contacts} c on c.id = cp.contact_id
        join ${secureNumbers} sn on sn.person_id = c.owner_id
        where c.owner_id = ${personId}`,
    now,
  );

/**
 * The receiver's contact-phone buckets that hold one of `phones` (a select
 * of one column `e164`): the buckets a contact write touches, once with the
 * phones it replaces or deletes (before the delete) and once with the phones
 * it writes. A bucket emptied by the write is rewritten too (as empty).
 */
export const workForContactPhones = (db: Db, personId: number, phones: SQL, now: Date) =>
  upsertWork(
    db,
    sql`select distinct ${contactBucketKeySql(sql`sn.e164`, sql`p.e164`)} as k
        from (${phones}) p join ${secureNumbers} sn on sn.person_id = ${personId}`,
    now,
  );

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

/** Any keys (a fill, a test). */
export const workForKeys = (db: Db, keys: string[], now: Date) =>
  upsertWork(db, sql`select distinct value as k from json_each(${JSON.stringify(keys)})`, now);

/* ---------- applying the work ---------- */

/**
 * `applied`: keys done (put, or `unchanged`: KV already holds that value);
 * `busy`: keys another applier holds right now (it may have read D1 before
 * the latest write).
 */
export type ApplyResult = { applied: string[]; unchanged: string[]; failed: string[]; busy: string[] };

/**
 * A digest of the last value put counts while KV still holds that value: up
 * to the record's TTL after the put, less a minute (the time is taken when
 * the keys are claimed, before the put).
 */
const WRITTEN_TRUSTED_MS = RECORD_TTL_SECONDS * 1000 - 60_000;

/** A value's digest: the first 128 bits of its SHA-256, in hex. */
async function digestOf(value: string): Promise<string> {
  const hash = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(value));
  return [...new Uint8Array(hash, 0, 16)].map((byte) => byte.toString(16).padStart(2, "0")).join("");
}

/**
 * Applies index work: claims the keys (a lease, so one applier per key),
 * reads their records from D1 *after* claiming, puts in KV those whose value
 * differs from the one last put (`index_written`; `force`: put all, for keys
 * KV lacks), and deletes each row only if no write bumped its version
 * meanwhile (else it stays due and is applied again). A refused KV write
 * leaves the row due after a short backoff: it is retried, never papered
 * over with a delete.
 *
 * `keys`: those keys (after a commit); else the oldest due rows, at most
 * `limit` (the sweep). Cost: 1 claim, 1 read batch (9 reads) and the last
 * digests in one round, 1 write batch (4 statements) in D1 — 15 statements —
 * and at most one KV put per key, so `limit` bounds the KV operations.
 */
export async function applyIndexWork(
  { db, kv }: IndexDeps,
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
  const [records, written] = await Promise.all([
    computeRecords(db, claimedKeys),
    force
      ? []
      : db
          .select({ key: indexWritten.key, digest: indexWritten.digest })
          .from(indexWritten)
          .where(
            sql`${inList(indexWritten.key, claimedKeys)} and ${indexWritten.writtenAt} > ${t - WRITTEN_TRUSTED_MS}`,
          )
          .all(),
  ]);
  const lastPut = new Map(written.map((row) => [row.key, row.digest]));
  const outcomes = await Promise.all(
    claimed.map(async (row) => {
      const value = records.get(row.key)!;
      const digest = await digestOf(value);
      // KV holds this very value (put by an earlier apply, within its TTL): nothing to write.
      if (lastPut.get(row.key) === digest) return { ...row, digest, ok: true, put: false };
      return { ...row, digest, ok: await safePut(kv, row.key, value, RECORD_TTL_SECONDS), put: true };
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
      update ${indexWork} set due_at = ${t} + min(60000, 1000 * (1 << min(attempts - 1, 6)))
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
    cutoff: new Date(now.getTime() - RECORD_TTL_SECONDS * 1000),
    maxStatements,
  });

/** KV allows one write per second per key; a refused write is reported, never thrown. */
async function safePut(kv: KVNamespace, key: string, value: string, ttlSeconds: number): Promise<boolean> {
  try {
    await kv.put(key, value, { expirationTtl: ttlSeconds });
    return true;
  } catch (err) {
    logError("trust index write refused; retried later", err, { key });
    return false;
  }
}
