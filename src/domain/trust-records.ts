import { KEY_KINDS } from "./key-kinds";

/*
 * The trust-lookup index's keys and records (docs/architecture.md, "The
 * trust index"), shared by their two writers — D1's index work (`num:`) and
 * each person's object (`rcv:`, `rcvn:`) — and by the lookup that reads them.
 *
 * - `rcv:<e164>`: the receiver holding secure number e164: who they are and
 *   their trust inputs (people and companies they trust or distrust, their
 *   companies, which contact-phone buckets are not empty).
 * - `rcvn:<e164>:<dd>`: that receiver's contact phones ending in the two
 *   digits dd (one of 100 buckets), read in the same round as the others for
 *   the caller's dd, so a lookup never reads the whole contact list.
 * - `num:<e164>`: who calls from e164: the people holding it (a personal phone
 *   they confirmed, or their secure number) and the companies calling from it (verified phones).
 */

/**
 * Records carry no TTL: the index is complete, and every write rewrites what it changed. A digest of
 * the value last put lets a writer skip an unchanged put; it counts for this long, after which the
 * value is put again (a cheap refresh that also repairs a key lost by hand). A day: the rows go with
 * it (retention, `pruneIndexWritten`), so the bookkeeping of a rebuild is gone within a day.
 */
export const WRITTEN_TRUSTED_MS = 24 * 3600 * 1000;

/**
 * The mark the index rebuild puts once every key is written (services/index-rebuild.ts): from then
 * on an absent key means "nobody", answered without D1; before it, a miss falls back to D1.
 */
export const INDEX_COMPLETE_KEY = KEY_KINDS.idx.key("complete");

export const receiverKey = KEY_KINDS.rcv.key;
export const numberKey = KEY_KINDS.num.key;
/** The bucket of a number: its last two digits, as a number 0–99. */
export const bucketOf = (e164: string) => Number(e164.slice(-2));
export const contactBucketKey = (receivingE164: string, bucket: number) =>
  KEY_KINDS.rcvn.key({ e164: receivingE164, bucket });

/** The receiver record: `p` = person id (0: nobody holds the number). */
export type ReceiverRecord = {
  p: number;
  /** The buckets (last two digits, 0–99) holding at least one contact phone; the phones are in `rcvn:` keys. */
  nb: number[];
  /** People they trusted (`trusted = 1`). */
  tp: number[];
  /** Companies they belong to. */
  c: number[];
  /** Companies they set to `trusted` / `negative`. */
  tc: number[];
  nc: number[];
  /** Strict mode: only callers verified at level A ring (docs/decisions.md, "Caller verification"); absent: everyone. */
  vo?: 1;
};

/** Who calls from a number: people holding it (a phone they confirmed, or their secure number) and companies with it as a verified phone. */
export type NumberRecord = { p: number[]; c: number[] };

export const NOBODY: ReceiverRecord = { p: 0, nb: [], tp: [], c: [], tc: [], nc: [] };
export const NO_HOLDERS: NumberRecord = { p: [], c: [] };

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
  return caller.c.some((id) => trustsCompany(receiver, id));
}

/** The caller's companies the receiver trusts (the company half of `decide`). */
export const trustedCompaniesOf = (receiver: ReceiverRecord, caller: NumberRecord) =>
  caller.c.filter((id) => trustsCompany(receiver, id));

/** Whether the receiver trusts company `id`: they belong to it or set it to `trusted`, and did not set it to `negative`. */
function trustsCompany(receiver: ReceiverRecord, id: number): boolean {
  return !receiver.nc.includes(id) && (receiver.c.includes(id) || receiver.tc.includes(id));
}

/**
 * A bucket's value: its phones, sorted, with a comma before and after each
 * (`",+14155550100,+442071838700,"`; `""` for none), searched in one pass.
 */
export const contactPhoneList = (phones: string[]) =>
  phones.length === 0 ? "" : `,${[...new Set(phones)].sort().join(",")},`;

/** Whether `e164` is one of the phones of a bucket (its `rcvn:` value). */
export const hasContactPhone = (bucket: string, e164: string) => bucket.includes(`,${e164},`);

/** A value's digest: the first 128 bits of its SHA-256, in hex (what was last put, without keeping it). */
export async function digestOf(value: string): Promise<string> {
  const hash = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(value));
  return [...new Uint8Array(hash, 0, 16)].map((byte) => byte.toString(16).padStart(2, "0")).join("");
}
