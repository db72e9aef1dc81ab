import { and, eq, inArray, notInArray, or } from "drizzle-orm";
import { type SQLiteColumn, union } from "drizzle-orm/sqlite-core";
import type { Db } from "../db/client";
import {
  companyPhones,
  companyTrust,
  contactPhones,
  contacts,
  memberships,
  personPhones,
  personTrust,
  secureNumbers,
} from "../db/schema";

/**
 * The trust-lookup fast path (DECISIONS §3). Two derived indexes live in the
 * `TRUST_INDEX` KV namespace:
 *
 * - `sn:<e164>` → the id of the person holding that secure number, "0" for none;
 * - `trust:<personId>` → JSON array of the E.164 numbers that person trusts.
 *
 * D1 is the truth: a miss is filled from D1, and every write that changes an
 * answer rewrites the affected key with the new value (a delete alone would
 * leave the next lookup paying for the rebuild on the ringing path). KV is
 * eventually consistent (https://developers.cloudflare.com/kv/concepts/how-kv-works/),
 * so a change is seen by other locations within about 60 s. The TTLs are a
 * safety net for changes made outside these functions (an operator editing D1):
 * no entry outlives them.
 *
 * A fill after a miss reads D1, then writes KV later (after the answer): a
 * write's rewrite can land in between and be overwritten with what D1 said
 * before it. So a fill lives only `MISS_FILL_TTL_SECONDS` (KV's minimum), which
 * bounds that staleness by the same ~60 s; rewrites after a write, which
 * read D1 after committing, keep the long TTLs.
 */
export const SECURE_NUMBER_TTL_SECONDS = 24 * 3600;
export const TRUST_SET_TTL_SECONDS = 3600;
export const MISS_FILL_TTL_SECONDS = 60;

const secureKey = (e164: string) => `sn:${e164}`;
const trustKey = (personId: number) => `trust:${personId}`;

/**
 * Fills a missed key. The trust-lookup passes `waitUntil` so the call is
 * answered before the write; other callers await it.
 */
export type Defer = (work: Promise<unknown>) => void;

/** The person holding secure number `e164`, or null; KV first, D1 on a miss. */
export async function receiverOf(db: Db, kv: KVNamespace, e164: string, defer?: Defer): Promise<number | null> {
  const cached = await safeGet(kv, secureKey(e164));
  if (cached !== null) {
    const id = Number(cached);
    return Number.isSafeInteger(id) && id > 0 ? id : null;
  }
  const row = await db
    .select({ personId: secureNumbers.personId })
    .from(secureNumbers)
    .where(eq(secureNumbers.e164, e164))
    .get();
  const personId = row?.personId ?? null;
  await fill(safePut(kv, secureKey(e164), String(personId ?? 0), MISS_FILL_TTL_SECONDS), defer);
  return personId;
}

async function fill(work: Promise<unknown>, defer: Defer | undefined) {
  if (defer) defer(work);
  else await work;
}

/** Records who holds a secure number (after an assignment or a release). */
export async function indexSecureNumber(kv: KVNamespace, e164: string, personId: number | null) {
  await safePut(kv, secureKey(e164), String(personId ?? 0), SECURE_NUMBER_TTL_SECONDS);
}

/** Whether `personId` trusts calls from `e164`; KV first, D1 on a miss. */
export async function trusts(db: Db, kv: KVNamespace, personId: number, e164: string, defer?: Defer): Promise<boolean> {
  const cached = await safeGet(kv, trustKey(personId));
  if (cached !== null) {
    const numbers = parseSet(cached);
    if (numbers) return numbers.includes(e164);
  }
  const numbers = await trustedNumbers(db, personId);
  await fill(writeSet(kv, personId, numbers, MISS_FILL_TTL_SECONDS), defer);
  return numbers.includes(e164);
}

function parseSet(value: string): string[] | null {
  try {
    const numbers = JSON.parse(value) as unknown;
    return Array.isArray(numbers) ? (numbers as string[]) : null;
  } catch {
    return null; // a corrupt entry is rebuilt from D1
  }
}

const writeSet = (kv: KVNamespace, personId: number, numbers: string[], ttlSeconds = TRUST_SET_TTL_SECONDS) =>
  safePut(kv, trustKey(personId), JSON.stringify(numbers), ttlSeconds);

/**
 * Who is trusted (DECISIONS §3), straight from D1: the numbers receiver
 * `personId` trusts are
 * - the phones of their contacts;
 * - the phones and secure numbers of people they trusted (`trusted = 1`);
 * - the phones of companies they trust: companies they belong to or set to
 *   `trusted`, unless they set that company to `negative`.
 * `trusted = 0` and `negative` never grant trust.
 */
export async function trustedNumbers(db: Db, personId: number): Promise<string[]> {
  const trustedPeople = db
    .select({ id: personTrust.trustedPersonId })
    .from(personTrust)
    .where(and(eq(personTrust.personId, personId), eq(personTrust.trusted, true)));

  const rows = await union(
    db
      .select({ e164: contactPhones.e164 })
      .from(contactPhones)
      .innerJoin(contacts, eq(contacts.id, contactPhones.contactId))
      .where(eq(contacts.ownerId, personId)),
    db.select({ e164: personPhones.e164 }).from(personPhones).where(inArray(personPhones.personId, trustedPeople)),
    db.select({ e164: secureNumbers.e164 }).from(secureNumbers).where(inArray(secureNumbers.personId, trustedPeople)),
    db
      .select({ e164: companyPhones.e164 })
      .from(companyPhones)
      .where(companyTrustedBy(db, personId, companyPhones.companyId)),
  ).all();
  return rows.map((row) => row.e164).sort();
}

/**
 * `company` is a company `personId` trusts for calls: one they belong to or
 * set to `trusted`, unless they set it to `negative` (which overrides
 * membership).
 */
export function companyTrustedBy(db: Db, personId: number, company: SQLiteColumn) {
  const setting = (trust: "trusted" | "negative") =>
    db
      .select({ id: companyTrust.companyId })
      .from(companyTrust)
      .where(and(eq(companyTrust.personId, personId), eq(companyTrust.trust, trust)));
  const memberOf = db.select({ id: memberships.companyId }).from(memberships).where(eq(memberships.personId, personId));
  return and(
    or(inArray(company, memberOf), inArray(company, setting("trusted"))),
    notInArray(company, setting("negative")),
  );
}

/**
 * Rewrites the trusted-number sets of these people from D1. Call after any
 * write that changes who they trust. Never throws for KV: a refused write is
 * logged and the key deleted, so the next lookup reads D1.
 */
export async function rebuildFor(db: Db, kv: KVNamespace, ...personIds: number[]): Promise<void> {
  await Promise.all(
    [...new Set(personIds)].map(async (personId) => writeSet(kv, personId, await trustedNumbers(db, personId))),
  );
}

/**
 * Rewrites the sets that hold `personId`'s numbers: everyone who trusted
 * them. Call after their phones or secure number change.
 */
export async function rebuildForTrustersOf(db: Db, kv: KVNamespace, personId: number) {
  const trusters = await db
    .select({ id: personTrust.personId })
    .from(personTrust)
    .where(and(eq(personTrust.trustedPersonId, personId), eq(personTrust.trusted, true)))
    .all();
  if (trusters.length > 0) await rebuildFor(db, kv, ...trusters.map((row) => row.id));
}

/**
 * Rewrites the sets that depend on a company: its members and everyone with
 * a trust setting for it. Call after its phones, its members or a trust
 * setting for it change.
 */
export async function rebuildForCompany(db: Db, kv: KVNamespace, companyId: number) {
  const people = await union(
    db.select({ id: memberships.personId }).from(memberships).where(eq(memberships.companyId, companyId)),
    db.select({ id: companyTrust.personId }).from(companyTrust).where(eq(companyTrust.companyId, companyId)),
  ).all();
  if (people.length > 0) await rebuildFor(db, kv, ...people.map((row) => row.id));
}

/** What in the index depends on one person: see `dependentsOf`. */
export type Dependents = { personIds: number[]; secureNumbers: string[] };

/**
 * Everything in the index that depends on `personId`: their own trusted set
 * (their memberships and trust choices), the sets of people who trusted them
 * (their phones and secure number), and their secure number's holder entry.
 * Read it *before* a change that may delete the person: their trust rows and
 * number go with them.
 */
export async function dependentsOf(db: Db, personId: number): Promise<Dependents> {
  const [trusters, numbers] = await Promise.all([
    db
      .select({ id: personTrust.personId })
      .from(personTrust)
      .where(and(eq(personTrust.trustedPersonId, personId), eq(personTrust.trusted, true)))
      .all(),
    db.select({ e164: secureNumbers.e164 }).from(secureNumbers).where(eq(secureNumbers.personId, personId)).all(),
  ]);
  return { personIds: [personId, ...trusters.map((row) => row.id)], secureNumbers: numbers.map((row) => row.e164) };
}

/** Rewrites what `dependentsOf` found, from D1 as it is now. */
export async function refresh(db: Db, kv: KVNamespace, dependents: Dependents): Promise<void> {
  await rebuildFor(db, kv, ...dependents.personIds);
  if (dependents.secureNumbers.length === 0) return;
  const holders = await db
    .select({ e164: secureNumbers.e164, personId: secureNumbers.personId })
    .from(secureNumbers)
    .where(inArray(secureNumbers.e164, dependents.secureNumbers))
    .all();
  const holderOf = new Map(holders.map((row) => [row.e164, row.personId]));
  await Promise.all(dependents.secureNumbers.map((e164) => indexSecureNumber(kv, e164, holderOf.get(e164) ?? null)));
}

async function safeGet(kv: KVNamespace, key: string): Promise<string | null> {
  try {
    return await kv.get(key);
  } catch (err) {
    console.error(JSON.stringify({ level: "error", error: `trust index read failed: ${String(err)}`, key }));
    return null;
  }
}

/** KV allows one write per second per key; a refused write must not fail the request that changed D1. */
async function safePut(kv: KVNamespace, key: string, value: string, ttlSeconds: number) {
  try {
    await kv.put(key, value, { expirationTtl: ttlSeconds });
  } catch (err) {
    console.error(JSON.stringify({ level: "error", error: `trust index write failed: ${String(err)}`, key }));
    await kv.delete(key).catch(() => undefined);
  }
}
