import { sql } from "drizzle-orm";
import type { Db } from "../../db/client";
import { memberships, people, personEmails } from "../../db/schema";
import { inList } from "../../db/sql";
import type { IndexLinks, LinkCard } from "../../domain/contact-links";
import { linkMatches, valueKeysOf, type LinkMatch } from "../../domain/contact-view";
import { KEY_KINDS, kindOf, keysOfKind } from "../../domain/key-kinds";
import { groupBy } from "../../lib/group";
import { logError } from "../../lib/log";
import type { Deps } from "../deps";
import { e2eeColumn } from "../people";

/*
 * The keys contacts link through (docs/architecture.md, "The trust index"):
 * `eml:<email>`, who owns an email (`num:` says who holds a number), and
 * `lnk:<person id>`, what a contact's link shows of that person. Both are
 * D1's index work, kept current by D1's triggers (drizzle/0030) and written
 * by the rebuild; a contacts sync or page reads them instead of D1
 * (services/contacts.ts) once the rebuild put `CONTACTS_COMPLETE_KEY`.
 */

/** `eml:` value: the person who owns the email (absent key: nobody). */
export type EmailRecord = { p: number };

/** `lnk:` value (domain/contact-links.ts): what a contact's link shows of that person. */
export type { LinkCard };

/**
 * Put by the rebuild once every `eml:` and `lnk:` key is written: from then on an absent one means
 * "nobody"; before it (an index built before these keys existed) contacts link through D1.
 */
export const CONTACTS_COMPLETE_KEY = KEY_KINDS.idx.key("contacts");

/** The `eml:` records of `keys` as D1 has them now, in one read; an email nobody owns maps to null. */
export async function computeEmailRecords(db: Db, keys: string[]): Promise<Map<string, string | null>> {
  const own = keysOfKind(keys, "eml");
  if (own.length === 0) return new Map();
  const rows = await db
    .select({ email: personEmails.email, personId: personEmails.personId })
    .from(personEmails)
    .where(inList(personEmails.email, own.map(KEY_KINDS.eml.parse)))
    .all();
  const records = new Map<string, string | null>(own.map((key) => [key, null]));
  for (const row of rows)
    records.set(KEY_KINDS.eml.key(row.email), JSON.stringify({ p: row.personId } satisfies EmailRecord));
  return records;
}

/** The `lnk:` cards of `keys` as D1 has them now, in one batch of two reads; a person gone maps to null. */
export async function computeLinkCards(db: Db, keys: string[]): Promise<Map<string, string | null>> {
  const own = keysOfKind(keys, "lnk");
  if (own.length === 0) return new Map();
  const ids = own.map(KEY_KINDS.lnk.parse);
  const [found, companies] = await db.batch([
    db
      .select({ id: people.id, a: people.avatarUrl, r: people.riskScore, e: e2eeColumn })
      .from(people)
      .where(inList(people.id, ids)),
    db
      .select({ personId: memberships.personId, companyId: memberships.companyId })
      .from(memberships)
      .where(sql`${inList(memberships.personId, ids)}`),
  ]);
  const companiesOf = groupBy(companies, (row) => row.personId);
  const cards = new Map<string, string | null>(own.map((key) => [key, null]));
  for (const row of found) {
    const c = [...new Set((companiesOf.get(row.id) ?? []).map((m) => m.companyId))].sort((x, y) => x - y);
    const card: LinkCard = { a: row.a, r: row.r, e: row.e ? 1 : 0, c };
    cards.set(KEY_KINDS.lnk.key(row.id), JSON.stringify(card));
  }
  return cards;
}

/** A platform person one of a page's phones or emails names, with what their link shows (services/contacts.ts). */
export type { LinkMatch };

/** KV reads at most 100 keys in one bulk get (https://developers.cloudflare.com/kv/api/read-key-value-pairs/). */
const BULK_GET = 100;

async function getMany(kv: KVNamespace, keys: string[]): Promise<Map<string, string | null>> {
  const found = new Map<string, string | null>();
  const parts: string[][] = [];
  for (let i = 0; i < keys.length; i += BULK_GET) parts.push(keys.slice(i, i + BULK_GET));
  for (const map of await Promise.all(parts.map((part) => kv.get(part, "text"))))
    for (const [key, value] of map) found.set(key, value);
  return found;
}

/** What `linksFromIndex` answers: the page's matches, and what it read from KV, at `readAt` (ms), to keep. */
export type IndexAnswer = { matches: LinkMatch[]; read: IndexLinks; readAt: number };

/**
 * The people a page's phones and emails name, read from the index instead of D1: the `num:` record
 * of each phone (its people: the holder of that secure number, or the person who proved that
 * phone) and the `eml:` record of each email, in one round of KV bulk gets with the owner's own
 * `lnk:` card and the mark, then the `lnk:` cards of the people named, in a second. `kept`: what the
 * owner's object still keeps of these links (objects/person/links.ts); only the rest is read, and
 * a round with nothing to read is not made (a page whose links are all kept reads no KV key).
 * `trustedMe`: the people who trusted the owner (the owner's object's mirror), read with the page,
 * so whether a person knows the owner is decided now, never kept. Null when the index cannot answer
 * (no `CONTACTS_COMPLETE_KEY` yet, a card missing, KV failing): the caller reads D1 instead.
 */
export async function linksFromIndex(
  { kv }: Deps,
  ownerId: number,
  phones: string[],
  emails: string[],
  trustedMe: number[],
  kept: IndexLinks = { values: {} },
): Promise<IndexAnswer | null> {
  try {
    const readAt = Date.now();
    const ownerKey = KEY_KINDS.lnk.key(ownerId);
    const valueKeys = valueKeysOf(phones, emails);
    const missing = valueKeys.filter(({ key }) => kept.values[key] === undefined).map(({ key }) => key);
    const ownerKeys = kept.owner === undefined ? [ownerKey, CONTACTS_COMPLETE_KEY] : [];
    const found = await getMany(kv, [...missing, ...ownerKeys]);
    let owner = kept.owner;
    if (owner === undefined) {
      const card = found.get(ownerKey) ?? null;
      if ((found.get(CONTACTS_COMPLETE_KEY) ?? null) === null || card === null) return null;
      owner = JSON.parse(card) as LinkCard;
    }
    // The people each value read now names; their cards are read in this call too, so a link
    // kept later is no older than its read.
    const namedNow = new Map<string, number[]>();
    for (const key of missing) {
      const record = found.get(key) ?? null;
      if (record === null) namedNow.set(key, []);
      else if (kindOf(key) === "num") namedNow.set(key, (JSON.parse(record) as { p: number[] }).p);
      else namedNow.set(key, [(JSON.parse(record) as EmailRecord).p]);
    }
    const cardsNow = new Map<number, LinkCard>(ownerKeys.length > 0 ? [[ownerId, owner]] : []);
    const cardKeys = [...new Set([...namedNow.values()].flat())]
      .filter((id) => !cardsNow.has(id))
      .map(KEY_KINDS.lnk.key);
    for (const [key, value] of cardKeys.length > 0 ? await getMany(kv, cardKeys) : []) {
      // Named but without a card (written between the two rounds, or not yet): D1 decides.
      if (value === null) return null;
      cardsNow.set(KEY_KINDS.lnk.parse(key), JSON.parse(value) as LinkCard);
    }
    const read: IndexLinks = { ...(ownerKeys.length > 0 ? { owner } : {}), values: {} };
    for (const [key, ids] of namedNow)
      read.values[key] = ids.map((personId) => ({ personId, card: cardsNow.get(personId)! }));
    const matches = linkMatches(ownerId, owner, valueKeys, (key) => read.values[key] ?? kept.values[key], trustedMe);
    return { matches, read, readAt };
  } catch (err) {
    logError("reading contact links from the trust index failed; read from D1", err);
    return null;
  }
}

/**
 * The one person a trust request's target names, read from the index (services/trust-requests.ts): a
 * `user_id` whose `lnk:` card exists, the first person of a phone's `num:` record (the holder of that
 * secure number, or the person who proved the phone), the owner in an email's `eml:` record. Null when
 * the index does not name one (an absent key, KV failing): the caller asks D1, which decides.
 */
export async function personNamedInIndex(
  { kv }: Deps,
  target: { user_id?: number; phone?: string; email?: string },
): Promise<number | null> {
  try {
    if (target.user_id !== undefined)
      return (await kv.get(KEY_KINDS.lnk.key(target.user_id))) === null ? null : target.user_id;
    if (target.phone !== undefined) {
      const record = await kv.get<{ p: number[] }>(KEY_KINDS.num.key(target.phone), "json");
      return record?.p[0] ?? null;
    }
    if (target.email !== undefined)
      return (await kv.get<EmailRecord>(KEY_KINDS.eml.key(target.email), "json"))?.p ?? null;
  } catch (err) {
    logError("reading a trust request's target from the trust index failed; read from D1", err);
  }
  return null;
}
