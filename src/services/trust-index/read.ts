import { fillKey } from "../../db/kv-writes";
import {
  bucketOf,
  contactBucketKey,
  INDEX_COMPLETE_KEY,
  NO_HOLDERS,
  NOBODY,
  numberKey,
  receiverKey,
  type NumberRecord,
  type ReceiverRecord,
} from "../../domain/trust-records";
import { factsOfNumber } from "../../db/facts";
import { d1Fallback } from "../../lib/fallback-gate";
import { loggedKeys } from "../../domain/key-kinds";
import { logError } from "../../lib/log";
import type { Deps } from "../deps";
import { makeCurrent } from "./current";
import { markStale } from "./stale";
import { computeRecords, EMPTY_NUMBER } from "./numbers";

/**
 * The trust-lookup index (docs/architecture.md, "The trust index"): KV
 * records keyed by the two inputs of the question (src/domain/trust-records.ts),
 * so a warm lookup is one round: one bulk get of three keys. This file reads
 * them for a lookup; the rest of the index is beside it:
 *
 * - domain/key-kinds.ts: the registry of key kinds (prefix, builder, parser,
 *   SQL, writer), and ./kinds.ts, how D1's index work computes each of its kinds;
 * - ./stale.ts: the statements a write adds to its own batch to mark the keys
 *   it made stale (`markStale*`, `index_work` rows);
 * - ./current.ts: making those keys current after the commit (`makeCurrent`;
 *   `prs:` rows tell a person's object D1's facts);
 * - ./numbers.ts, ./companies.ts, ./contacts.ts: the `num:`, `co:`, `eml:`
 *   and `lnk:` records as D1 has them; ./contacts.ts also reads the links a
 *   contacts page shows.
 *
 * Two writers of the index, one per key, and both write through the one
 * writer of due keys (db/kv-writes.ts), at most once a second per key:
 * - each person's object writes their `rcv:` and `rcvn:` keys after its own
 *   commit (src/objects/person/index-keys.ts); D1 tells it what it needs of
 *   the platform — their secure number and companies — through `prs:<id>`
 *   work rows, made current like the keys;
 * - D1's index work writes the `num:`, `co:`, `tok:`, `eml:` and `lnk:` keys;
 *   the rows are made current after commit and retried until KV (or the
 *   object) accepts them.
 * A missed key is answered from its source — D1 for `num:`, the person's
 * object for `rcv:`/`rcvn:` — and written again.
 */

/** KV's minimum TTL: a fill that found nothing (most unknown callers) lives this long. */
export const EMPTY_FILL_TTL_SECONDS = 60;

export type Defer = (work: Promise<unknown>) => void;

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
  deps: Deps,
  receivingE164: string,
  callerE164: string | null,
  defer: Defer,
): Promise<{ receiver: ReceiverRecord; caller: NumberRecord; bucket: string; unavailable?: true }> {
  const rcv = receiverKey(receivingE164);
  const num = callerE164 ? numberKey(callerE164) : null;
  const bucketKey = callerE164 ? contactBucketKey(receivingE164, bucketOf(callerE164)) : null;
  const keys = [rcv, ...(num ? [num] : []), ...(bucketKey ? [bucketKey] : []), INDEX_COMPLETE_KEY];
  const { found, failed } = await safeGetMany(deps.kv, keys);
  // KV failed and this isolate read D1 for it less than a second ago: no answer from the index.
  if (failed && !d1Fallback.pass()) return { receiver: NOBODY, caller: NO_HOLDERS, bucket: "", unavailable: true };
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
      defer(fillKey(deps.kv, rcv, JSON.stringify(NOBODY), EMPTY_FILL_TTL_SECONDS));
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

/**
 * Fills missed `num:` keys. An empty record is put directly with a short TTL
 * (a race with a write can leave it stale for at most that long); a record
 * with content goes through the index work, so no older value can overwrite
 * a newer one, and has no TTL.
 */
async function fill(deps: Deps, computed: Map<string, string>) {
  const now = new Date();
  const empty = [...computed].filter(([, value]) => value === EMPTY_NUMBER);
  const full = [...computed].filter(([, value]) => value !== EMPTY_NUMBER).map(([key]) => key);
  await Promise.all(empty.map(([key, value]) => fillKey(deps.kv, key, value, EMPTY_FILL_TTL_SECONDS)));
  if (full.length > 0) {
    await deps.db.batch([markStale(deps.db, full, now)]);
    // KV lacks these keys whatever the digests say (expired, or never put): put them.
    // A key written less than a second ago (KV lost it since) is put once that second has passed.
    await makeCurrent(deps, { keys: full, now, force: true, waitDeferred: true });
  }
}

/**
 * Reads `keys` in one KV operation (a bulk get); a failed read counts as a miss for each key (D1
 * decides, when the isolate's fallback gate lets it: lib/fallback-gate.ts).
 */
async function safeGetMany(
  kv: KVNamespace,
  keys: string[],
): Promise<{ found: Map<string, string | null>; failed: boolean }> {
  try {
    return { found: await kv.get(keys, "text"), failed: false };
  } catch (err) {
    logError("trust index read failed", err, loggedKeys(keys));
    return { found: new Map(), failed: true };
  }
}
