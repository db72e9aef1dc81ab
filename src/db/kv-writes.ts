import { loggedKeys } from "../domain/key-kinds";
import { digestOf, WRITTEN_TRUSTED_MS } from "../domain/trust-records";
import { logError } from "../lib/log";
import { backoff } from "../lib/backoff";
import { KEY_RETRY, KEY_WRITE_GAP_MS } from "../domain/key-kinds";

/*
 * The one writer of due KV keys (docs/architecture.md, "The trust index":
 * "One writer of due keys"), used by both sides that keep index keys: each person's object
 * (`rcv:`/`rcvn:`, src/objects/person/index-keys.ts) and D1's index work
 * (`num:`, `co:`, `tok:`, `eml:`, `lnk:`, services/trust-index/current.ts). Each side keeps, per key, what it
 * last wrote (the digest and the time) in its own storage and holds the key
 * while it writes (the object's one flush at a time, the index work's lease);
 * this module decides, for each due key, whether to write it now, and writes.
 *
 * - A key whose value has the digest last written (within its trust window)
 *   is not written: nothing changed.
 * - A key written less than `KEY_WRITE_GAP_MS` ago is not written either: it
 *   stays due until the second has passed (`deferred`, with the time it may
 *   go), so a burst of changes is coalesced into one write of the latest
 *   value; the first write of a burst goes out at once.
 * - A refused write is reported (`refused`, with the time of the retry after
 *   a backoff that grows with the refusals), never thrown: it stays due.
 */

/** KV's one write per second per key (domain/key-kinds.ts, the one constant of the rule). */
export { KEY_WRITE_GAP_MS };

/** The wait before retrying after the `refusals`-th refusal in a row: 1 s, 2 s, 4 s … at most 60 s (`KEY_RETRY`). */
export const retryDelayMs = (refusals: number) => backoff(Math.max(refusals - 1, 0), KEY_RETRY);

export type DueKey = {
  key: string;
  /** The value the key should hold now; null: it should not exist (it is deleted). */
  value: string | null;
  /** The digest of the value last written (null: a delete, or never written). */
  digest: string | null;
  /** When the key was last written (put or deleted); null: never, as far as this side knows. */
  writtenAt: number | null;
  /** Write even when the digest says KV holds the value (KV lacks the key: a lookup missed it). */
  force?: boolean;
  /** Refusals of this key so far (the backoff). */
  refusals?: number;
};

export type KeyWrite = {
  key: string;
  /** The digest of the value the key should hold (null: none, the key is deleted). */
  digest: string | null;
  /**
   * `written`: put or deleted at `at`; `unchanged`: KV holds the value already; `deferred`: written
   * less than a second ago, due again at `at`; `refused`: KV refused, retry at `at`.
   */
  outcome: "written" | "unchanged" | "deferred" | "refused";
  at: number;
};

/**
 * Writes the due keys that changed and may be written now (see above), all at once. `now` is when
 * the caller read the values. A written key's time is taken after its write returned, so two writes
 * of a key are at least `KEY_WRITE_GAP_MS` apart however long a write took.
 */
export async function writeDueKeys(kv: KVNamespace, due: DueKey[], now = Date.now()): Promise<KeyWrite[]> {
  return Promise.all(
    due.map(async (row): Promise<KeyWrite> => {
      const digest = row.value === null ? null : await digestOf(row.value);
      const held = row.writtenAt !== null && row.writtenAt > now - WRITTEN_TRUSTED_MS;
      if (!row.force && row.digest === digest && (digest === null || held))
        return { key: row.key, digest, outcome: "unchanged", at: now };
      if (row.writtenAt !== null && now < row.writtenAt + KEY_WRITE_GAP_MS)
        return { key: row.key, digest, outcome: "deferred", at: row.writtenAt + KEY_WRITE_GAP_MS };
      try {
        if (row.value === null) await kv.delete(row.key);
        else await kv.put(row.key, row.value);
        return { key: row.key, digest, outcome: "written", at: Math.max(now, Date.now()) };
      } catch (err) {
        logError("trust index write refused; retried later", err, loggedKeys([row.key]));
        return { key: row.key, digest, outcome: "refused", at: now + retryDelayMs((row.refusals ?? 0) + 1) };
      }
    }),
  );
}

/** The earliest time a key left due (deferred or refused) may be written; null: none is left. */
export function nextWriteAt(writes: KeyWrite[]): number | null {
  const left = writes.filter((write) => write.outcome === "deferred" || write.outcome === "refused");
  return left.length === 0 ? null : Math.min(...left.map((write) => write.at));
}

/** Recent fills by this isolate: key → when. A fill is a cache write another fill may make again. */
const filled = new Map<string, number>();

/**
 * A short-lived fill after a lookup missed (a number nobody holds): put with `ttlSeconds` unless
 * this isolate put the key less than a second ago (the same fill, from a concurrent miss). A
 * refused put is logged and dropped: the next miss fills again.
 */
export async function fillKey(kv: KVNamespace, key: string, value: string, ttlSeconds: number): Promise<void> {
  const now = Date.now();
  const last = filled.get(key);
  if (last !== undefined && now < last + KEY_WRITE_GAP_MS) return;
  if (filled.size >= 1_000) for (const [k, at] of filled) if (now >= at + KEY_WRITE_GAP_MS) filled.delete(k);
  filled.set(key, now);
  try {
    await kv.put(key, value, { expirationTtl: ttlSeconds });
  } catch (err) {
    logError("trust index fill refused; the next miss fills again", err, loggedKeys([key]));
  }
}

/**
 * The rebuild's own keys (services/index-rebuild.ts): its progress and the index's marks. They are
 * no index key of anyone — no lookup reads a record from them, no command changes them — and only
 * the rebuild writes them, each at most once per chunk of its work.
 */
export async function putRebuildKey(kv: KVNamespace, key: string, value: string): Promise<void> {
  await kv.put(key, value);
}

/**
 * Who holds a push address (services/push/directory.ts): no index key either, written by the
 * registration that takes the address over (or renews it once a week), one put per registration
 * at most, living `ttlSeconds`.
 */
export async function putPushHolder(kv: KVNamespace, key: string, value: string, ttlSeconds: number): Promise<void> {
  await kv.put(key, value, { expirationTtl: ttlSeconds });
}
