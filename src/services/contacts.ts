/*
 * One file past 400 lines on purpose: a person's contacts are one aggregate
 * whose reads (linking, pages, call-lookup's details) and writes (sync,
 * update, delete, tombstones) share the same statement builders (`idIn`,
 * `contactReads`, `phonesOfContacts`). It is the next to move into the
 * person's own object (docs/architecture.md, "Where data lives").
 */
import { and, asc, count, eq, gte, sql, type SQL } from "drizzle-orm";
import type { BatchResponse } from "drizzle-orm/batch";
import type { SQLiteColumn } from "drizzle-orm/sqlite-core";
import type { Db } from "../db/client";
import { inList } from "../db/sql";
import { failedGuard, guardStatement } from "../db/guard";
import { pruneOlderThan, type PruneResult } from "../db/prune";
import { knowsPerson } from "./acquaintance";
import { WriteBatch, type Deps } from "./outbox";
import { contactAddresses, contactEmails, contactPhones, contacts, contactTombstones, people } from "../db/schema";
import { badRequest, gone, notFound } from "../lib/errors";
import { groupBy } from "../lib/group";
import { iso } from "../lib/time";
import { e2eeColumn } from "./people";

/** The collections `include` can add to a listed contact, by their write names [seed 2.7]. */
export const CONTACT_COLLECTIONS = ["emails", "phone_numbers", "addresses"] as const;
export type ContactCollection = (typeof CONTACT_COLLECTIONS)[number];
const ALL_COLLECTIONS = new Set<ContactCollection>(CONTACT_COLLECTIONS);

/** Contacts a person may keep (docs/decisions.md). */
export const MAX_CONTACTS_PER_PERSON = 10_000;
/** How long a deleted contact is remembered for `GET /contacts/deleted` (docs/decisions.md). */
export const TOMBSTONE_RETENTION_DAYS = 90;
const DAY_MS = 24 * 3600 * 1000;

/** The Contact of [seed 2.7] as read (docs/decisions.md, "Contacts"). */
export type Contact = {
  id: number;
  profile_icon: string;
  display_name: string;
  birthday: string | null;
  email?: string[];
  phone?: string[];
  address?: string[];
  risk_score: number;
  labels: string[];
  user_id: number | null;
  connected: boolean;
  e2ee: boolean;
  created: string;
  updated: string;
};

/**
 * A contact as written, already standardized by the route's schema (emails
 * lowercased, phones in E.164, duplicates removed). A field left out keeps its
 * value; a collection that is present replaces the stored one.
 */
/** What one contact may hold (docs/decisions.md): a write with more is a 400 and changes nothing. */
export const CONTACT_CAPS = { phone_numbers: 20, emails: 20, addresses: 10 } as const;

export type ContactInput = {
  id?: number;
  display_name?: string;
  birthday?: string | null;
  labels?: string[];
  emails?: string[];
  phone_numbers?: string[];
  addresses?: string[];
};

/**
 * The platform person linked to each contact: one holding one of the
 * contact's phone numbers (personal phone or secure number), or, only when
 * that person knows the owner, one of its emails; the lowest id when several
 * match. `known` says whether the owner may see the person's avatar and risk
 * score. Linking by phone alone reveals no more than a secure messenger does:
 * that the number can be called securely. A grouped union, written in SQL.
 */
const linkedPeople = (db: Db, ownerId: number, ids: ContactIds) => {
  const matches = sql`(
    select contact_id, min(person_id) as person_id from (
      select cp.contact_id, pp.person_id from contact_phones cp
        join person_phones pp on pp.e164 = cp.e164
        where ${idIn(sql`cp.contact_id`, ids)}
      union all
      select cp.contact_id, sn.person_id from contact_phones cp
        join secure_numbers sn on sn.e164 = cp.e164
        where sn.person_id is not null and ${idIn(sql`cp.contact_id`, ids)}
      union all
      select ce.contact_id, pe.person_id from contact_emails ce
        join person_emails pe on pe.email = ce.email
        where ${idIn(sql`ce.contact_id`, ids)}
          and ${knowsPerson(sql`pe.person_id`, ownerId)}
    ) group by contact_id
  ) as m`;
  return db
    .select({
      contactId: sql<number>`m.contact_id`,
      personId: people.id,
      avatarUrl: people.avatarUrl,
      riskScore: people.riskScore,
      e2ee: e2eeColumn,
      known: sql<number>`${knowsPerson(sql`m.person_id`, ownerId)}`,
    })
    .from(matches)
    .innerJoin(people, sql`${people.id} = m.person_id`);
};

/**
 * Which contacts to read: a list of ids (answered in that order), or a
 * subquery selecting them (answered by id), so a caller can read contacts
 * in the same batch as the query that finds them.
 */
type ContactIds = number[] | SQL;
const idIn = (column: SQL | SQLiteColumn, ids: ContactIds) =>
  Array.isArray(ids) ? inList(column, ids) : sql`${column} in (${ids})`;

/**
 * The reads behind `loadContacts`, as statements to run in one `db.batch`
 * (alone, or with a caller's own reads) and the function that turns their
 * results into Contacts: the owner's contacts of `ids` (ids that are not the
 * owner's are left out), with the collections named in `include`.
 */
export function contactReads(
  db: Db,
  ownerId: number,
  ids: ContactIds,
  include: ReadonlySet<ContactCollection> = ALL_COLLECTIONS,
) {
  // A collection `include` leaves out is not read (`where 0`: SQLite answers without a lookup).
  const ofContacts = (collection: ContactCollection, column: SQLiteColumn) =>
    include.has(collection) ? idIn(column, ids) : sql`0`;
  const statements = [
    db
      .select()
      .from(contacts)
      .where(and(eq(contacts.ownerId, ownerId), idIn(contacts.id, ids)))
      .orderBy(asc(contacts.id)),
    linkedPeople(db, ownerId, ids),
    db
      .select({ contactId: contactEmails.contactId, value: contactEmails.email })
      .from(contactEmails)
      .where(ofContacts("emails", contactEmails.contactId))
      .orderBy(asc(contactEmails.id)),
    db
      .select({ contactId: contactPhones.contactId, value: contactPhones.e164 })
      .from(contactPhones)
      .where(ofContacts("phone_numbers", contactPhones.contactId))
      .orderBy(asc(contactPhones.id)),
    db
      .select({ contactId: contactAddresses.contactId, value: contactAddresses.line })
      .from(contactAddresses)
      .where(ofContacts("addresses", contactAddresses.contactId))
      .orderBy(asc(contactAddresses.id)),
  ] as const;

  const assemble = ([rows, links, emails, phones, addresses]: BatchResponse<typeof statements>): Contact[] => {
    const byContact = (list: { contactId: number; value: string }[]) =>
      new Map(
        [...groupBy(list, (entry) => entry.contactId)].map(([id, group]) => [id, group.map((entry) => entry.value)]),
      );
    const emailsOf = byContact(emails);
    const phonesOf = byContact(phones);
    const addressesOf = byContact(addresses);
    const linkOf = new Map(links.map((link) => [link.contactId, link]));
    const rowOf = new Map(rows.map((row) => [row.id, row]));
    const order = Array.isArray(ids) ? ids : rows.map((row) => row.id);

    return order.flatMap((id) => {
      const row = rowOf.get(id);
      if (!row) return [];
      const link = linkOf.get(id);
      const contact: Contact = {
        id: row.id,
        profile_icon: (link?.known && link.avatarUrl) || "",
        display_name: row.displayName,
        birthday: row.birthday,
        risk_score: link?.known ? link.riskScore : 0,
        labels: row.labels,
        user_id: link?.personId ?? null,
        connected: link !== undefined,
        e2ee: Boolean(link?.e2ee),
        created: iso(row.createdAt)!,
        updated: iso(row.updatedAt)!,
      };
      if (include.has("emails")) contact.email = emailsOf.get(id) ?? [];
      if (include.has("phone_numbers")) contact.phone = phonesOf.get(id) ?? [];
      if (include.has("addresses")) contact.address = addressesOf.get(id) ?? [];
      return [contact];
    });
  };
  return { statements, assemble };
}

/**
 * Loads the owner's contacts of `ids` in that order (ids that are not the
 * owner's are left out), with the collections named in `include`.
 * One D1 round trip, whatever the number of contacts.
 */
export async function loadContacts(
  db: Db,
  ownerId: number,
  ids: number[],
  include: ReadonlySet<ContactCollection> = ALL_COLLECTIONS,
): Promise<Contact[]> {
  if (ids.length === 0) return [];
  const reads = contactReads(db, ownerId, ids, include);
  return reads.assemble(await db.batch(reads.statements));
}

/**
 * One page of the owner's contacts, oldest first, optionally changed since a
 * time: the page's ids are a subquery of the contact reads, so the page, its
 * collections and the total are one D1 round trip.
 */
export async function listContacts(
  db: Db,
  ownerId: number,
  options: { since?: Date; limit: number; offset: number; include: ReadonlySet<ContactCollection> },
) {
  const where = and(eq(contacts.ownerId, ownerId), options.since ? gte(contacts.updatedAt, options.since) : undefined);
  const page = db
    .select({ id: contacts.id })
    .from(contacts)
    .where(where)
    .orderBy(asc(contacts.id))
    .limit(options.limit)
    .offset(options.offset);
  const reads = contactReads(db, ownerId, sql`select id from ${page}`, options.include);
  const [[totals], ...results] = await db.batch([
    db.select({ total: count() }).from(contacts).where(where),
    ...reads.statements,
  ]);
  return { items: reads.assemble(results as BatchResponse<typeof reads.statements>), total: totals?.total ?? 0 };
}

/** The reads of the owner's contacts having `e164` among their phones (call-lookup batches them with its own). */
export function contactsWithPhone(db: Db, ownerId: number, e164: string) {
  return contactReads(
    db,
    ownerId,
    sql`select cp.contact_id from contact_phones cp join contacts c on c.id = cp.contact_id
        where c.owner_id = ${ownerId} and cp.e164 = ${e164}`,
  );
}

/**
 * Sync (docs/decisions.md): elements with an `id` update that contact of the
 * owner, the others create one. All or nothing: every id is checked first
 * (a bad one is a 400 naming its index) and every write goes in one
 * `db.batch`, which D1 runs as one transaction. Besides one UPDATE per
 * updated contact, the statements are a fixed handful whatever the size: the
 * rows travel as one JSON parameter unpacked with `json_each`, which keeps
 * every statement under D1's 100 bound parameters
 * (https://developers.cloudflare.com/d1/platform/limits/).
 * Returns the resulting contacts in request order.
 */
export async function saveContacts(deps: Deps, ownerId: number, inputs: ContactInput[]): Promise<Contact[]> {
  const { db } = deps;
  if (inputs.length === 0) return [];
  await assertUpdatable(db, ownerId, inputs);
  const now = Date.now();

  const updates = inputs.filter((input) => input.id !== undefined);
  const creates = inputs.filter((input) => input.id === undefined);
  if (creates.length > 0) await assertRoomFor(db, ownerId, creates.length);

  const updateStatements = updates.map((input) => {
    const set: Partial<typeof contacts.$inferInsert> = { updatedAt: new Date(now) };
    if (input.display_name !== undefined) set.displayName = input.display_name;
    if (input.birthday !== undefined) set.birthday = input.birthday;
    if (input.labels !== undefined) set.labels = input.labels;
    return db
      .update(contacts)
      .set(set)
      .where(and(eq(contacts.id, input.id!), eq(contacts.ownerId, ownerId)));
  });

  // Collections present on an update replace the stored ones.
  const replaced = (key: "emails" | "phone_numbers" | "addresses") =>
    updates.filter((input) => input[key] !== undefined).map((input) => input.id!);

  // New contacts are inserted by one statement in request order, so inside
  // the transaction they take consecutive ids ending at max(id): the k-th new
  // contact is max(id) - creates + 1 + k. Children find their contact that way.
  const createRows = JSON.stringify(
    creates.map((input) => ({
      display_name: input.display_name ?? "",
      birthday: input.birthday ?? null,
      labels: input.labels ?? [],
    })),
  );
  const children = JSON.stringify(
    inputs.map((input) => ({
      ...(input.id !== undefined ? { id: input.id } : { k: creates.indexOf(input) }),
      emails: input.emails,
      phone_numbers: input.phone_numbers,
      addresses: input.addresses,
    })),
  );
  const contactIdOf = sql`coalesce(json_extract(j.value, '$.id'), (select max(id) from contacts) - ${creates.length} + 1 + json_extract(j.value, '$.k'))`;
  // insert … select with SQL fills every column in schema order: (id, contact_id, value).
  const insertChildren = (table: typeof contactEmails | typeof contactPhones | typeof contactAddresses, key: string) =>
    db.insert(table).select(sql`
      select null, ${contactIdOf}, item.value
      from json_each(${children}) as j, json_each(j.value, ${`$.${key}`}) as item
      where exists (select 1 from contacts where id = ${contactIdOf} and owner_id = ${ownerId})
      order by j.key, item.key`);

  const batch = new WriteBatch(deps);
  for (const statement of updateStatements) batch.add(statement);
  // Trust index: only the buckets of the phones replaced (read before their delete) and of the phones
  // written, and the receiver record (its list of non-empty buckets) when any phone is involved.
  const goingPhones = replaced("phone_numbers");
  const writtenPhones = [...new Set(inputs.flatMap((input) => input.phone_numbers ?? []))];
  if (goingPhones.length > 0) batch.reindexContactPhones(ownerId, phonesOfContacts(goingPhones));
  batch.add(db.delete(contactEmails).where(inList(contactEmails.contactId, replaced("emails"))));
  batch.add(db.delete(contactPhones).where(inList(contactPhones.contactId, replaced("phone_numbers"))));
  batch.add(db.delete(contactAddresses).where(inList(contactAddresses.contactId, replaced("addresses"))));
  const inserted = batch.add(
    // Columns in schema order: id, owner_id, display_name, birthday, labels, created_at, updated_at.
    db
      .insert(contacts)
      .select(
        sql`select null, ${ownerId}, json_extract(value, '$.display_name'), json_extract(value, '$.birthday'),
                   json_extract(value, '$.labels'), ${now}, ${now}
            from json_each(${createRows}) order by key`,
      )
      .returning({ id: contacts.id }),
  );
  batch.add(insertChildren(contactEmails, "emails"));
  batch.add(insertChildren(contactPhones, "phone_numbers"));
  batch.add(insertChildren(contactAddresses, "addresses"));
  if (writtenPhones.length > 0) {
    batch.reindexContactPhones(ownerId, sql`select value as e164 from json_each(${JSON.stringify(writtenPhones)})`);
  }
  if (goingPhones.length > 0 || writtenPhones.length > 0) batch.reindexReceiver(ownerId);
  // Two syncs may both have seen room for their contacts: the guard rolls the later one back.
  if (creates.length > 0) {
    batch.add(
      guardStatement(
        db,
        "contactQuota",
        sql`(select count(*) from ${contacts} where ${contacts.ownerId} = ${ownerId}) > ${MAX_CONTACTS_PER_PERSON}`,
      ),
    );
  }
  let results: unknown[];
  try {
    ({ results } = await batch.commit());
  } catch (err) {
    if (failedGuard(err) === "contactQuota") throw noRoom(await contactsHeld(db, ownerId), creates.length);
    throw err;
  }

  const createdIds = (results[inserted] as { id: number }[]).map((row) => row.id).sort((a, b) => a - b);
  const ids = inputs.map((input) => input.id ?? createdIds[creates.indexOf(input)]!);
  return loadContacts(db, ownerId, ids);
}

/** Every id must name one of the owner's contacts, once; otherwise 400 naming the element. */
async function assertUpdatable(db: Db, ownerId: number, inputs: ContactInput[]) {
  const ids = inputs.flatMap((input) => (input.id === undefined ? [] : [input.id]));
  if (ids.length === 0) return;
  const owned = new Set(
    (
      await db
        .select({ id: contacts.id })
        .from(contacts)
        .where(and(eq(contacts.ownerId, ownerId), inList(contacts.id, ids)))
        .all()
    ).map((row) => row.id),
  );
  const seen = new Map<number, number>();
  inputs.forEach((input, index) => {
    if (input.id === undefined) return;
    if (!owned.has(input.id)) throw badRequest(`invalid body: \`[${index}].id\` contact ${input.id} does not exist`);
    const earlier = seen.get(input.id);
    if (earlier !== undefined) {
      throw badRequest(
        `invalid body: \`[${index}].id\` contact ${input.id} is already updated by element [${earlier}]`,
      );
    }
    seen.set(input.id, index);
  });
}

/**
 * At most 10,000 contacts per person (docs/decisions.md): a sync that would
 * pass it is a 400 naming the limit. A count on the owner's index; two
 * concurrent syncs can together pass it by at most one sync's size (500).
 */
async function assertRoomFor(db: Db, ownerId: number, creating: number) {
  const have = await contactsHeld(db, ownerId);
  if (have + creating > MAX_CONTACTS_PER_PERSON) throw noRoom(have, creating);
}

async function contactsHeld(db: Db, ownerId: number): Promise<number> {
  const [row] = await db.select({ n: count() }).from(contacts).where(eq(contacts.ownerId, ownerId));
  return row?.n ?? 0;
}

const noRoom = (have: number, creating: number) =>
  badRequest(
    `a person may keep at most ${MAX_CONTACTS_PER_PERSON.toLocaleString("en-US")} contacts; you have ${have} and this sync would create ${creating}; delete some first`,
  );

/** The phones of these contacts, as a select of one column `e164` (for `reindexContactPhones`). */
const phonesOfContacts = (ids: ContactIds) =>
  sql`select ${contactPhones.e164} as e164 from ${contactPhones} where ${idIn(contactPhones.contactId, ids)}`;

/** Whether `id` is one of the owner's contacts. */
export async function ownsContact(db: Db, ownerId: number, id: number): Promise<boolean> {
  const row = await db
    .select({ id: contacts.id })
    .from(contacts)
    .where(and(eq(contacts.id, id), eq(contacts.ownerId, ownerId)))
    .get();
  return row !== undefined;
}

/** PUT /contacts/{id}: updates one of the owner's contacts; 404 when it is not theirs (or was deleted meanwhile). */
export async function updateContact(deps: Deps, ownerId: number, id: number, input: ContactInput): Promise<Contact> {
  if (!(await ownsContact(deps.db, ownerId, id))) throw notFound(`contact ${id} does not exist`);
  const [saved] = await saveContacts(deps, ownerId, [{ ...input, id }]);
  if (!saved) throw notFound(`contact ${id} does not exist`);
  return saved;
}

/**
 * Records the owner's contacts `which` selects as deleted (a tombstone each),
 * in the batch that deletes them, right before the DELETE: a committed
 * deletion always has its tombstone, a failed one has none.
 */
function addTombstones(batch: WriteBatch, ownerId: number, which: SQL) {
  const { db } = batch.deps;
  // Columns in schema order: id, owner_id, contact_id, deleted_at.
  batch.add(
    db
      .insert(contactTombstones)
      .select(
        sql`select null, ${ownerId}, ${contacts.id}, ${batch.now.getTime()} from ${contacts} where ${which} order by ${contacts.id}`,
      ),
  );
}

/** Deletes one of the owner's contacts; 404 when there is none. */
export async function deleteContact(deps: Deps, ownerId: number, id: number): Promise<void> {
  const batch = new WriteBatch(deps);
  const mine = and(eq(contacts.id, id), eq(contacts.ownerId, ownerId))!;
  addTombstones(batch, ownerId, mine);
  // Before the delete: the buckets of its phones (at most one per phone), and the receiver's bucket list.
  batch.reindexContactPhones(ownerId, phonesOfContacts(sql`select id from ${contacts} where ${mine}`));
  batch.reindexReceiver(ownerId);
  const deleted = batch.add(deps.db.delete(contacts).where(mine).returning({ id: contacts.id }));
  const { results } = await batch.commit();
  if ((results[deleted] as unknown[]).length === 0) throw notFound(`contact ${id} does not exist`);
}

/** Development only: removes every contact of the owner. */
export async function clearContacts(deps: Deps, ownerId: number) {
  const batch = new WriteBatch(deps);
  const mine = eq(contacts.ownerId, ownerId);
  addTombstones(batch, ownerId, mine);
  // Before the delete: every bucket holding a phone now (all emptied), and the receiver's bucket list.
  batch.reindexContactsOf(ownerId);
  batch.add(deps.db.delete(contacts).where(mine));
  await batch.commit();
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
  db: Db,
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
  const where = and(eq(contactTombstones.ownerId, ownerId), gte(contactTombstones.deletedAt, options.since));
  const [rows, [totals]] = await db.batch([
    db
      .select({ id: contactTombstones.contactId, deletedAt: contactTombstones.deletedAt })
      .from(contactTombstones)
      .where(where)
      .orderBy(asc(contactTombstones.deletedAt), asc(contactTombstones.id))
      .limit(options.limit)
      .offset(options.offset),
    db.select({ total: count() }).from(contactTombstones).where(where),
  ]);
  return {
    items: rows.map((row) => ({ id: row.id, deleted_at: iso(row.deletedAt)! })),
    total: totals?.total ?? 0,
  };
}

/** Rows one prune statement deletes at most, and statements per run (docs/architecture.md, "Background work"). */
export const TOMBSTONE_PRUNE_CHUNK = 5_000;
const TOMBSTONE_PRUNE_MAX_CHUNKS = 20;

/**
 * Daily: forgets tombstones older than the retention (docs/decisions.md), in
 * statements of at most 5,000 rows and at most 20 of them per invocation,
 * found through the index on `deleted_at` (`pruneOlderThan`, shared by every
 * retention rule). `more`: the budget ran out, so the caller continues with
 * a `tombstones` message on the background queue.
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
