import { sql, type SQL } from "drizzle-orm";
import { batchableAll } from "../db/sql";
import type { Db } from "../db/client";
import { pruneOlderThan, type PruneResult } from "../db/prune";
import { contactTombstones } from "../db/schema";
import {
  CONTACT_COLLECTIONS,
  contactsView,
  unresolvedOf,
  type Contact,
  type ContactCollection,
  type LinkMatch,
} from "../domain/contact-view";
import type { ContactInput, ContactRead } from "../objects/person/api";
import { KEEP } from "../objects/person/limits";
import { gone, notFound } from "../lib/errors";
import { logError } from "../lib/log";
import { DAY_MS, iso } from "../lib/time";
import { knowsPerson } from "./acquaintance";
import type { Deps } from "./deps";
import { accepted } from "./person-objects";
import { e2eeColumn } from "./people";
import { linksFromIndex } from "./trust-index/contacts";
import type { Defer } from "./trust-index/read";

/*
 * A person's contacts (docs/contacts-sync.md). They live in the person's
 * own object (docs/architecture.md, "Where data lives"), which checks and
 * writes them and owns the trust-lookup keys they feed; this service turns
 * the object's answers into the API's Contacts, linking each to the platform
 * person behind it through the trust index (`num:`, `eml:` and `lnk:` keys,
 * services/trust-index/contacts.ts), or one D1 read per page when the index
 * cannot answer.
 */

export type { ContactInput };

export { CONTACT_COLLECTIONS, type ContactCollection };
const ALL_COLLECTIONS = new Set<ContactCollection>(CONTACT_COLLECTIONS);

/** How long a deleted contact is remembered for `GET /contacts/deleted` (docs/decisions.md). */
export const TOMBSTONE_RETENTION_DAYS = KEEP.tombstoneDays;

/** What one contact may hold (docs/decisions.md): a write with more is a 400 and changes nothing. */
export const CONTACT_CAPS = { phone_numbers: 20, emails: 20, addresses: 10 } as const;

export type { Contact };

/** A platform person holding one of a page's phones or emails (an email links only a person who knows the owner). */
type Match = LinkMatch;

/**
 * The platform person linked to each contact, as one D1 read: the owner of
 * one of the contact's phone numbers (the holder of that secure number, or
 * the person who proved that phone; never one who only holds it), or,
 * only when that person knows the owner, one of its emails; the lowest id
 * when several match. `known` says whether the owner may see the person's
 * avatar and risk score. Linking by phone alone reveals no more than a
 * secure messenger does: that the number can be called securely. The page's
 * phones and emails travel as two JSON parameters, each probing its unique
 * index; the matches are assigned to the contacts here. Who trusted the owner
 * comes with the read, at most `MIRROR_INLINE` of them (objects/person); past
 * that, `unresolved` names the matched people the read could not decide, the
 * caller asks the owner's object about them (`trustedMe(ids)`) and hands the
 * answer to `assemble`. Returns the statement, built when called (to run
 * alone or in a caller's batch; a page its links come to from the index never
 * builds it), or null when the contacts hold no phone or email, and the
 * functions that turn its rows into Contacts with the collections named in
 * `include`.
 */
export function contactsRead(
  db: Db,
  ownerId: number,
  read: ContactRead,
  include: ReadonlySet<ContactCollection> = ALL_COLLECTIONS,
) {
  const phones = [...new Set(read.items.flatMap((contact) => contact.phones))];
  const emails = [...new Set(read.items.flatMap((contact) => contact.emails))];
  const knows = (person: SQL) => knowsPerson(person, ownerId, read.trustedMe);
  const statement = () => {
    const phoneList = JSON.stringify(phones);
    return batchableAll<Match>(
      db,
      sql`
    select m.value, m.via, people.id as personId, people.avatar_url as avatarUrl, people.risk_score as riskScore,
           ${e2eeColumn} as e2ee, ${knows(sql`people.id`)} as known
    from (
      select pp.e164 as value, 'phone' as via, pp.person_id from person_phones pp
        where pp.e164 in (select value from json_each(${phoneList})) and pp.confirmed = 1
      union all
      select sn.e164, 'phone', sn.person_id from secure_numbers sn
        where sn.e164 in (select value from json_each(${phoneList})) and sn.person_id is not null
      union all
      select pe.email, 'email', pe.person_id from person_emails pe
        where pe.email in (select value from json_each(${JSON.stringify(emails)}))
    ) m join people on people.id = m.person_id`,
    );
  };
  const unresolved = (matches: Match[]): number[] => unresolvedOf(matches, read.trustedMeOf);
  const assemble = (rows: Match[], trustedAmong: number[] = []): Contact[] =>
    contactsView(read.items, rows, trustedAmong, include);
  const none = phones.length + emails.length === 0;
  return { statement: none ? null : statement, phones, emails, assemble, unresolved };
}

/**
 * The object's contacts as the API shows them: their links read from the
 * trust index (two rounds of KV bulk gets) for the values whose links the
 * owner's object does not keep fresh (`read.links`, objects/person/links.ts),
 * what was read handed back to the object after the answer (`defer`), or one
 * D1 read when the index cannot answer (and, only for a person trusted by more
 * than `MIRROR_INLINE` people, one question to their object about the people
 * the page links to).
 */
async function render(
  deps: Deps,
  ownerId: number,
  read: ContactRead,
  defer: Defer,
  include: ReadonlySet<ContactCollection> = ALL_COLLECTIONS,
): Promise<Contact[]> {
  const { statement, phones, emails, assemble, unresolved } = contactsRead(deps.db, ownerId, read, include);
  const linked = statement ? await linksFromIndex(deps, ownerId, phones, emails, read.trustedMe, read.links) : null;
  if (linked && (linked.read.owner !== undefined || Object.keys(linked.read.values).length > 0)) {
    const kept = deps.objects.of(ownerId).keepLinks(linked.read, linked.readAt);
    defer(Promise.resolve(kept).catch((err: unknown) => logError("keeping contact links in the object failed", err)));
  }
  const rows = statement ? (linked?.matches ?? ((await deps.db.batch([statement()]))[0] as Match[])) : [];
  const ask = unresolved(rows);
  return assemble(rows, ask.length > 0 ? await deps.objects.of(ownerId).trustedMe(ask) : []);
}

/** One of the owner's contacts; 404 when it is not theirs. */
export async function getContact(deps: Deps, ownerId: number, id: number, defer: Defer): Promise<Contact> {
  const [contact] = await render(deps, ownerId, await deps.objects.of(ownerId).contacts([id]), defer);
  if (!contact) throw notFound(`contact ${id} does not exist`);
  return contact;
}

/**
 * One page of the owner's contacts, oldest first, optionally changed since a time, as the answer's
 * JSON text: rendered by the owner's object when it keeps every link the page needs (one RPC, the
 * text sent as it is), else rendered here from the page it answers instead.
 */
export async function listContacts(
  deps: Deps,
  ownerId: number,
  options: { since?: Date; limit: number; offset: number; include: ReadonlySet<ContactCollection> },
  defer: Defer,
): Promise<{ body: string; total: number }> {
  const listing = await deps.objects.of(ownerId).contactListing({
    since: options.since?.getTime() ?? null,
    limit: options.limit,
    offset: options.offset,
    include: [...options.include],
  });
  if (listing.read === undefined) return { body: listing.body, total: listing.total };
  // As JSON text: cheaper across the RPC than the structured clone of the page (objects/person/person.ts).
  const page = JSON.parse(listing.read) as ContactRead;
  return { body: JSON.stringify(await render(deps, ownerId, page, defer, options.include)), total: page.total };
}

/**
 * Sync (docs/contacts-sync.md): elements with an `id` update that contact of
 * the owner, the others create one; all or nothing. The owner's object
 * checks every id (a bad one is a 400 naming its index) and the 10,000
 * quota, and writes everything in one transaction. Returns the contacts in
 * request order, linked as the index names them now (a write's answer takes
 * no kept link), which the object then keeps for the next pages.
 */
export async function saveContacts(
  deps: Deps,
  ownerId: number,
  inputs: ContactInput[],
  defer: Defer,
): Promise<Contact[]> {
  if (inputs.length === 0) return [];
  const saved = accepted(await deps.objects.write(ownerId, (person) => person.saveContacts(inputs)));
  return render(deps, ownerId, saved, defer);
}

/** PUT /contacts/{id}: updates one of the owner's contacts; 404 when it is not theirs. */
export async function updateContact(
  deps: Deps,
  ownerId: number,
  id: number,
  input: ContactInput,
  defer: Defer,
): Promise<Contact> {
  const answer = await deps.objects.write(ownerId, (person) => person.saveContacts([{ ...input, id }]));
  // A single update is refused only for its id: the path's 404, not the sync's 400 naming `[0].id`.
  const saved = accepted(answer.ok ? answer : { ok: false, status: 404, message: `contact ${id} does not exist` });
  const [contact] = await render(deps, ownerId, saved, defer);
  return contact!;
}

/** Deletes one of the owner's contacts (remembered for `GET /contacts/deleted`); 404 when there is none. */
export async function deleteContact(deps: Deps, ownerId: number, id: number): Promise<void> {
  const deleted = await deps.objects.write(ownerId, (person) => person.deleteContacts([id]));
  if (deleted.length === 0) throw notFound(`contact ${id} does not exist`);
}

/** Development only: removes every contact of the owner (each remembered as deleted). */
export async function clearContacts(deps: Deps, ownerId: number) {
  await deps.objects.write(ownerId, (person) => person.deleteContacts("all"));
}

/** A deleted contact as `GET /contacts/deleted` lists it. */
export type DeletedContact = { id: number; deleted_at: string };

/**
 * One page of the owner's contacts deleted at or after `since`, oldest
 * first (docs/decisions.md). A `since` older than the retention is 410: the
 * deletions before it may have been forgotten, so the client must
 * resynchronise in full (docs/contacts-sync.md).
 */
export async function listDeletedContacts(
  deps: Deps,
  ownerId: number,
  options: { since: Date; limit: number; offset: number; now?: Date },
): Promise<{ items: DeletedContact[]; total: number }> {
  const now = options.now ?? new Date();
  const horizon = new Date(now.getTime() - TOMBSTONE_RETENTION_DAYS * DAY_MS);
  if (options.since < horizon) {
    throw gone(
      `deletions are kept for ${TOMBSTONE_RETENTION_DAYS} days; \`since\` ${options.since.toISOString()} is older than ${horizon.toISOString()}, so resynchronise in full (GET /contacts) and use the time of that sync from then on`,
    );
  }
  const page = await deps.objects.of(ownerId).deletedContacts({
    since: options.since.getTime(),
    limit: options.limit,
    offset: options.offset,
  });
  return {
    items: page.items.map((row) => ({ id: row.id, deleted_at: iso(new Date(row.deletedAt))! })),
    total: page.total,
  };
}

/** Rows one prune statement deletes at most, and statements per run (docs/architecture.md, "Background work"). */
export const TOMBSTONE_PRUNE_CHUNK = 5_000;
const TOMBSTONE_PRUNE_MAX_CHUNKS = 20;

/**
 * Daily, until the D1 table is dropped after the move into the objects:
 * forgets D1's tombstones older than the retention, in statements of at most
 * 5,000 rows and at most 20 of them per invocation (`more`: continue with a
 * `tombstones` message). The objects prune their own with their alarm.
 */
export async function pruneContactTombstones(
  db: Db,
  now: Date,
  { chunk = TOMBSTONE_PRUNE_CHUNK, maxChunks = TOMBSTONE_PRUNE_MAX_CHUNKS } = {},
): Promise<PruneResult> {
  return pruneOlderThan(db, {
    table: contactTombstones,
    column: contactTombstones.deletedAt,
    cutoff: new Date(now.getTime() - TOMBSTONE_RETENTION_DAYS * DAY_MS),
    chunk,
    maxStatements: maxChunks,
  });
}
