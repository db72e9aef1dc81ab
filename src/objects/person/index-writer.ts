import type { DrizzleSqliteDODatabase } from "drizzle-orm/durable-sqlite";
import { contactBucketKey, NOBODY, receiverKey, type ReceiverRecord } from "../../domain/trust-records";
import type { Facts } from "./api";
import * as keys from "./index-keys";

/*
 * The writing of the person's trust-lookup keys (docs/architecture.md, "The
 * trust index"), around index-keys.ts: the writes one after another, and the
 * transaction bodies of the key methods (D1's facts taken, every key
 * rewritten, a lookup's miss answered).
 */

type Db = DrizzleSqliteDODatabase;

export class KeyWriter {
  /** The index-key writes, one after another, so a key's writes reach KV in the order of the changes. */
  private flushing: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly db: Db,
    private readonly kv: KVNamespace,
  ) {}

  /**
   * Writes the due index keys, after any write already under way (one at a
   * time, so a key's writes keep the order of the changes). Answers how many
   * writes failed (they stay due) and when the keys left due may go (`nextAt`:
   * refused, or written less than a second ago, db/kv-writes.ts; null: none);
   * a failure of the whole flush throws.
   */
  makeCurrent(): Promise<{ failed: number; nextAt: number | null }> {
    const run = this.flushing.then(() => keys.makeCurrent(this.db, this.kv));
    this.flushing = run.catch(() => undefined);
    return run;
  }

  /** Settles once the writes under way landed (or failed). */
  settled(): Promise<unknown> {
    return this.flushing;
  }
}

/** The index rebuild: D1's facts, and every key of the number marked due, written whatever KV is thought to hold. */
export function rewriteAll(db: Db, next: Facts) {
  keys.takeFacts(db, next);
  keys.markStale(db, keys.everyKey(db), true);
}

/**
 * A lookup missed this person's keys in KV and read D1's facts (`next`):
 * takes them and answers the receiver record and the bucket (`""`: empty);
 * the keys it `missed` are marked due again (forced). Run in one transaction.
 */
export function answerMiss(
  db: Db,
  next: Facts,
  bucket: number | null,
  missed: string[],
): { receiver: ReceiverRecord; bucket: string } {
  keys.takeFacts(db, next);
  // What this object holds now: the facts just pushed, or newer ones it had (a lagging replica's are ignored).
  const current = keys.readFacts(db)!;
  if (current.e164 !== next.e164) return { receiver: NOBODY, bucket: "" };
  const receiver = keys.receiverRecord(db, current);
  if (next.e164 === null) return { receiver, bucket: "" };
  const bucketKey = bucket === null ? null : contactBucketKey(next.e164, bucket);
  // Only the keys of this number the lookup missed are written again (KV expires each key on its
  // own); a bucket the record does not list stays deleted.
  const own = [receiverKey(next.e164), ...(bucketKey && receiver.nb.includes(bucket!) ? [bucketKey] : [])];
  keys.markStale(
    db,
    own.filter((key) => missed.includes(key)),
    true,
  );
  return { receiver, bucket: (bucketKey && keys.valueOf(db, next, bucketKey)) ?? "" };
}

/** The values of this person's keys now: key → value. */
export function values(db: Db): Record<string, string | null> {
  const every = keys.everyKey(db);
  const values = keys.valuesOf(db, keys.readFacts(db), every);
  return Object.fromEntries(every.map((key, i) => [key, values[i]!]));
}
