import { eq, sql } from "drizzle-orm";
import type { DrizzleSqliteDODatabase } from "drizzle-orm/durable-sqlite";
import { nextWriteAt, writeDueKeys } from "../../db/kv-writes";
import { KEY_KINDS, KEY_WRITE_GAP_MS, kindOf, type KindName } from "../../domain/key-kinds";
import {
  bucketOf,
  contactBucketKey,
  contactPhoneList,
  receiverKey,
  type ReceiverRecord,
} from "../../domain/trust-records";
import { nonEmptyBuckets, phonesByBucket } from "./contacts";
import { companyTrust, facts, indexKeys, personTrust, settings } from "./schema";
import type { Facts } from "../../domain/facts";

/*
 * The trust-lookup keys a person's object owns (docs/architecture.md, "The
 * trust index"): `rcv:<their secure number>` and its `rcvn:` buckets. Only
 * this object writes them, after its own commit: a change marks the keys it
 * touched as due (`markStale`, in the change's transaction), and `makeCurrent`
 * writes the due ones whose value changed, through the one writer of due keys
 * (db/kv-writes.ts). A refused write, or a key written less than a second
 * ago, stays due and the object's alarm writes it.
 */

type Db = DrizzleSqliteDODatabase;

export type { Facts } from "../../domain/facts";

export const readFacts = (db: Db): Facts | null => {
  const row = db.select().from(facts).where(eq(facts.one, 1)).get();
  return row
    ? {
        personId: row.personId,
        e164: row.e164,
        companies: row.companies,
        version: row.version,
        countryCode: row.countryCode,
        number: row.number,
        userAt: row.userAt,
        membershipAt: row.membershipAt,
        profile: row.profile,
      }
    : null;
};

/** What the heartbeat reads of the facts (docs/decisions.md, "The heartbeat reads no D1"). */
export type HeartbeatFacts = {
  secure: { country_code: string; number: string; e164: string };
  companies: number[];
  userAt: number;
  membershipAt: number | null;
};

/**
 * The facts the heartbeat answers from; null when they do not let it answer
 * without D1: no facts yet, no secure number (the first heartbeat assigns
 * one), or facts told without the heartbeat's part.
 */
export function heartbeatFacts(db: Db): HeartbeatFacts | null {
  const current = readFacts(db);
  if (!current?.e164 || !current.countryCode || !current.number || current.userAt == null) return null;
  return {
    secure: { country_code: current.countryCode, number: current.number, e164: current.e164 },
    companies: current.companies,
    userAt: current.userAt,
    membershipAt: current.membershipAt ?? null,
  };
}

/**
 * Takes D1's facts; marks due what they change: every key of the old and the
 * new number when the number changed (the old ones are deleted), the
 * receiver record when the companies changed.
 */
export function takeFacts(db: Db, next: Facts): boolean {
  const before = readFacts(db);
  // Older than what this object holds (read from a lagging replica): ignored, never a rollback.
  if (before && next.version < before.version) return false;
  const companies = [...new Set(next.companies)].sort((a, b) => a - b);
  // The heartbeat's part: facts told without it (older callers) keep what this version held, else unknown.
  const same = before?.version === next.version;
  const told = <T>(value: T | undefined, held: T | null | undefined): T | null =>
    value !== undefined ? value : same ? (held ?? null) : null;
  const row = {
    personId: next.personId,
    e164: next.e164,
    companies,
    version: next.version,
    countryCode: told(next.countryCode, before?.countryCode),
    number: told(next.number, before?.number),
    userAt: told(next.userAt, before?.userAt),
    membershipAt: told(next.membershipAt, before?.membershipAt),
    profile: told(next.profile, before?.profile),
  };
  db.insert(facts)
    .values({ one: 1, ...row })
    .onConflictDoUpdate({ target: facts.one, set: row })
    .run();
  if (before?.e164 !== next.e164) {
    // The old number's keys (deleted by the flush, since they no longer match) and all of the new one's.
    const old = db
      .select({ key: indexKeys.key })
      .from(indexKeys)
      .all()
      .map((row) => row.key);
    markStale(db, [...old, ...allKeys(db, next.e164)]);
  } else if (JSON.stringify(before.companies) !== JSON.stringify(companies)) {
    markStale(db, next.e164 ? [receiverKey(next.e164)] : []);
  }
  return true;
}

/** Every key the person's number has now: the receiver record and the non-empty buckets. */
function allKeys(db: Db, e164: string | null): string[] {
  if (e164 === null) return [];
  return [receiverKey(e164), ...nonEmptyBuckets(db).map((bucket) => contactBucketKey(e164, bucket))];
}

/** The keys a change of these contact phones touches: their buckets and the receiver record. */
export function keysOfPhones(db: Db, phones: string[]): string[] {
  const e164 = readFacts(db)?.e164 ?? null;
  if (e164 === null || phones.length === 0) return [];
  return [receiverKey(e164), ...new Set(phones.map((phone) => contactBucketKey(e164, bucketOf(phone))))];
}

/** The receiver record's key (a trust decision or setting changed). */
export function receiverKeys(db: Db): string[] {
  const e164 = readFacts(db)?.e164 ?? null;
  return e164 === null ? [] : [receiverKey(e164)];
}

/** Every key of the person's number, to be written even where the digests say KV has it (a lookup missed). */
export const everyKey = (db: Db) => allKeys(db, readFacts(db)?.e164 ?? null);

/** Marks keys due (`force`: put even an unchanged value); bumps their version. */
export function markStale(db: Db, keys: string[], force = false) {
  if (keys.length === 0) return;
  db.run(sql`insert into ${indexKeys} (key, digest, written_at, due, force, version, attempts)
    select value, null, null, 1, ${force ? 1 : 0}, 1, 0 from json_each(${JSON.stringify([...new Set(keys)])}) where true
    on conflict (key) do update set due = 1, force = max(force, excluded.force), version = version + 1`);
}

/** The contacts' phones by bucket, read at most once for all the values computed together. */
type Book = () => Map<number, string[]>;
const bookOf = (db: Db): Book => {
  let read: Map<number, string[]> | undefined;
  return () => (read ??= phonesByBucket(db));
};

/** The receiver record, as the lookup reads it. */
export function receiverRecord(db: Db, current: Facts, book: Book = bookOf(db)): ReceiverRecord {
  const ids = (rows: { id: number }[]) => rows.map((row) => row.id).sort((a, b) => a - b);
  const companySettings = db.select({ id: companyTrust.companyId, trust: companyTrust.trust }).from(companyTrust).all();
  return {
    p: current.personId,
    nb: [...book().keys()].sort((a, b) => a - b),
    tp: ids(db.select({ id: personTrust.personId }).from(personTrust).where(eq(personTrust.trusted, true)).all()),
    c: current.companies,
    tc: ids(companySettings.filter((row) => row.trust === "trusted")),
    nc: ids(companySettings.filter((row) => row.trust === "negative")),
    ...(verifiedOnly(db) ? { vo: 1 as const } : {}),
  };
}

/** Whether the person chose strict mode (`calls: verified_only`). */
const verifiedOnly = (db: Db) => db.select({ calls: settings.calls }).from(settings).get()?.calls === "verified_only";

/** How the object computes each kind it writes (the registry: domain/key-kinds.ts); null: the key should not exist. */
const VALUES: {
  [K in ObjectKind]: (
    db: Db,
    current: Facts,
    id: ReturnType<(typeof KEY_KINDS)[K]["parse"]>,
    book: Book,
  ) => string | null;
} = {
  rcv: (db, current, e164, book) => (e164 === current.e164 ? JSON.stringify(receiverRecord(db, current, book)) : null),
  rcvn: (_db, current, { e164, bucket }, book) => {
    if (e164 !== current.e164) return null;
    const list = contactPhoneList(book().get(bucket) ?? []);
    return list === "" ? null : list;
  },
};
type ObjectKind = { [K in KindName]: (typeof KEY_KINDS)[K]["writer"] extends "object" ? K : never }[KindName];

/**
 * A key's value now; null: the key should not exist (another number's, an empty bucket, not this object's
 * kind). Values computed together share one `book` (one read of the contacts' phones).
 */
export function valueOf(db: Db, current: Facts | null, key: string, book: Book = bookOf(db)): string | null {
  if (current === null || current.e164 === null) return null;
  const kind = kindOf(key);
  if (kind === "rcv") return VALUES.rcv(db, current, KEY_KINDS.rcv.parse(key), book);
  if (kind === "rcvn") return VALUES.rcvn(db, current, KEY_KINDS.rcvn.parse(key), book);
  return null;
}

/** The values of `keys` now, computed together (one read of the contacts' phones). */
export function valuesOf(db: Db, current: Facts | null, keys: string[]): (string | null)[] {
  const book = bookOf(db);
  return keys.map((key) => valueOf(db, current, key, book));
}

/**
 * Writes the due keys whose value differs from the one last written (or all
 * marked `force`) through the one writer of due keys (db/kv-writes.ts), then
 * records what KV holds. A key written less than a second ago stays due and
 * is written once that second has passed (the object's alarm, at `nextAt`):
 * a burst of changes costs one write per key per second. A key changed again
 * during the writes stays due (its version moved). Answers how many writes
 * were refused and when the earliest key left due may be written (null: none).
 */
export async function makeCurrent(
  db: Db,
  kv: KVNamespace,
  now = Date.now(),
): Promise<{ failed: number; nextAt: number | null }> {
  // A deleted key's row is kept for a second (its write time holds the next write back), then forgotten.
  db.run(
    sql`delete from ${indexKeys} where due = 0 and digest is null and (written_at is null or written_at <= ${now - KEY_WRITE_GAP_MS})`,
  );
  const due = db.select().from(indexKeys).where(eq(indexKeys.due, true)).all();
  if (due.length === 0) return { failed: 0, nextAt: null };
  // Every value is read now, before the first await: one consistent state.
  const values = valuesOf(
    db,
    readFacts(db),
    due.map((row) => row.key),
  );
  const writes = await writeDueKeys(
    kv,
    due.map((row, i) => ({ ...row, value: values[i]!, refusals: row.attempts })),
    now,
  );
  due.forEach((row, i) => {
    const { digest, outcome, at } = writes[i]!;
    if (outcome === "refused") {
      db.run(sql`update ${indexKeys} set attempts = attempts + 1 where key = ${row.key}`);
      return;
    }
    if (outcome === "deferred") return;
    const writtenAt = outcome === "written" ? at : row.writtenAt;
    db.run(sql`update ${indexKeys} set digest = ${digest}, written_at = ${writtenAt},
      attempts = 0, due = case when version = ${row.version} then 0 else 1 end,
      force = case when version = ${row.version} then 0 else force end where key = ${row.key}`);
  });
  return { failed: writes.filter((write) => write.outcome === "refused").length, nextAt: nextWriteAt(writes) };
}

/** Whether writes are still due, and the most attempts one of them has had (the alarm's backoff). */
export function dueState(db: Db): { due: boolean; attempts: number } {
  const row = db.get<{ n: number; a: number | null }>(
    sql`select count(*) as n, max(attempts) as a from ${indexKeys} where due = 1`,
  );
  return { due: (row?.n ?? 0) > 0, attempts: row?.a ?? 0 };
}

/** The person is gone: every key this object wrote is deleted from KV (a failure throws: the erasure is retried). */
export async function deleteAllKeys(db: Db, kv: KVNamespace) {
  const keys = db
    .select({ key: indexKeys.key })
    .from(indexKeys)
    .all()
    .map((row) => row.key);
  const all = [...new Set([...keys, ...everyKey(db)])];
  // Through the one writer of keys (db/kv-writes.ts), each a forced delete; a refusal throws here.
  const writes = await writeDueKeys(
    kv,
    all.map((key) => ({ key, value: null, digest: null, writtenAt: null, force: true })),
  );
  const refused = writes.filter((write) => write.outcome === "refused").length;
  if (refused > 0) throw new Error(`KV refused ${refused} of the erased person's key deletes`);
}
