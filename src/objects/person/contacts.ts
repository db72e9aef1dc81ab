import { and, asc, count, eq, gte, sql, type SQL } from "drizzle-orm";
import type { DrizzleSqliteDODatabase } from "drizzle-orm/durable-sqlite";
import { inList } from "../../db/sql";
import { bucketOf } from "../../domain/trust-records";
import { nextId } from "./ids";
import type { ContactInput, Refusal, StoredContact } from "./api";
import { MAX_CONTACTS } from "./limits";
import { contacts, contactTombstones, contactValues, type ContactValueKind } from "./schema";

/*
 * A person's contacts inside their object (docs/contacts-sync.md): the
 * statements of the Person class's contact methods. The class runs each
 * write in one storage transaction; nothing here awaits.
 */

type Db = DrizzleSqliteDODatabase;

const COLLECTIONS: [keyof ContactInput & ("emails" | "phone_numbers" | "addresses"), ContactValueKind][] = [
  ["emails", "email"],
  ["phone_numbers", "phone"],
  ["addresses", "address"],
];

/** Every id must name a contact here, once; otherwise the 400 naming the element. */
export function checkUpdatable(db: Db, inputs: ContactInput[]): Refusal | null {
  const ids = inputs.flatMap((input) => (input.id === undefined ? [] : [input.id]));
  if (ids.length === 0) return null;
  const owned = new Set(
    db
      .select({ id: contacts.id })
      .from(contacts)
      .where(inList(contacts.id, ids))
      .all()
      .map((row) => row.id),
  );
  const seen = new Map<number, number>();
  for (const [index, input] of inputs.entries()) {
    if (input.id === undefined) continue;
    if (!owned.has(input.id)) {
      return { ok: false, status: 400, message: `invalid body: \`[${index}].id\` contact ${input.id} does not exist` };
    }
    const earlier = seen.get(input.id);
    if (earlier !== undefined) {
      return {
        ok: false,
        status: 400,
        message: `invalid body: \`[${index}].id\` contact ${input.id} is already updated by element [${earlier}]`,
      };
    }
    seen.set(input.id, index);
  }
  return null;
}

/** At most 10,000 contacts (docs/decisions.md): exact, since one request at a time runs here. */
export function checkRoom(db: Db, creating: number): Refusal | null {
  if (creating === 0) return null;
  const have = contactCount(db);
  if (have + creating <= MAX_CONTACTS) return null;
  return {
    ok: false,
    status: 400,
    message: `a person may keep at most ${MAX_CONTACTS.toLocaleString("en-US")} contacts; you have ${have} and this sync would create ${creating}; delete some first`,
  };
}

const contactCount = (db: Db) => db.select({ n: count() }).from(contacts).get()?.n ?? 0;

/**
 * Writes a checked sync: updates, then creates under new ids (above the
 * newest, in the person's id slot). Returns the ids in request order and
 * the phones it removed or wrote (their buckets are the index keys touched).
 */
export function writeContacts(db: Db, me: number, inputs: ContactInput[], now: number) {
  const touched = new Set<string>();
  let last =
    db
      .select({ id: contacts.id })
      .from(contacts)
      .orderBy(sql`id desc`)
      .limit(1)
      .get()?.id ?? 0;
  const ids: number[] = [];
  const newRows: (typeof contacts.$inferInsert)[] = [];
  const values: [number, ContactValueKind, number, string][] = [];
  for (const input of inputs) {
    let id = input.id;
    if (id === undefined) {
      id = last = nextId(me, last, now);
      newRows.push({
        id,
        displayName: input.display_name ?? "",
        birthday: input.birthday ?? null,
        labels: input.labels ?? [],
        createdAt: new Date(now),
        updatedAt: new Date(now),
      });
    } else {
      const set: Partial<typeof contacts.$inferInsert> = { updatedAt: new Date(now) };
      if (input.display_name !== undefined) set.displayName = input.display_name;
      if (input.birthday !== undefined) set.birthday = input.birthday;
      if (input.labels !== undefined) set.labels = input.labels;
      db.update(contacts).set(set).where(eq(contacts.id, id)).run();
      for (const [field, kind] of COLLECTIONS) {
        if (input[field] === undefined) continue;
        const going = db
          .delete(contactValues)
          .where(and(eq(contactValues.contactId, id), eq(contactValues.kind, kind)))
          .returning({ value: contactValues.value })
          .all();
        if (kind === "phone") for (const row of going) touched.add(row.value);
      }
    }
    ids.push(id);
    for (const [field, kind] of COLLECTIONS) {
      (input[field] ?? []).forEach((value, position) => values.push([id, kind, position, value]));
    }
    for (const phone of input.phone_numbers ?? []) touched.add(phone);
  }
  insertContacts(db, newRows);
  insertValues(db, values);
  return { ids, touchedPhones: [...touched] };
}

/**
 * Rows travel as one JSON parameter (a Durable Object's SQLite binds at most
 * 100 parameters per statement), whatever their number.
 */
export function insertContacts(db: Db, rows: (typeof contacts.$inferInsert)[]) {
  if (rows.length === 0) return;
  const json = JSON.stringify(
    rows.map((row) => [
      row.id,
      row.displayName,
      row.birthday,
      JSON.stringify(row.labels),
      row.createdAt!.getTime(),
      row.updatedAt!.getTime(),
    ]),
  );
  db.run(sql`insert into ${contacts} (id, display_name, birthday, labels, created_at, updated_at)
    select value ->> 0, value ->> 1, value ->> 2, value ->> 3, value ->> 4, value ->> 5 from json_each(${json})
    where true on conflict (id) do nothing`);
}

export function insertValues(db: Db, values: [number, ContactValueKind, number, string][]) {
  if (values.length === 0) return;
  db.run(sql`insert into ${contactValues} (contact_id, kind, position, value)
    select value ->> 0, value ->> 1, value ->> 2, value ->> 3 from json_each(${JSON.stringify(values)})
    where true on conflict do nothing`);
}

/**
 * Deletes contacts (`ids`, or all of them) with a tombstone each. Returns
 * the ids deleted and the phones they had (their buckets are touched).
 */
export function deleteContacts(db: Db, ids: number[] | "all", now: number) {
  const which = ids === "all" ? undefined : inList(contacts.id, ids);
  const phones = db
    .select({ value: contactValues.value })
    .from(contactValues)
    .where(and(eq(contactValues.kind, "phone"), ids === "all" ? undefined : inList(contactValues.contactId, ids)))
    .all()
    .map((row) => row.value);
  const deleted = db
    .delete(contacts)
    .where(which)
    .returning({ id: contacts.id })
    .all()
    .map((row) => row.id);
  if (deleted.length === 0) return { deleted, touchedPhones: [] };
  db.delete(contactValues)
    .where(ids === "all" ? undefined : inList(contactValues.contactId, deleted))
    .run();
  db.run(sql`insert into ${contactTombstones} (contact_id, deleted_at)
    select value, ${now} from json_each(${JSON.stringify(deleted)}) where true
    on conflict (contact_id) do update set deleted_at = excluded.deleted_at`);
  return { deleted, touchedPhones: phones };
}

/** Contacts of `ids` (those that are here), in that order, with every collection. */
export function readContacts(db: Db, ids: number[]): StoredContact[] {
  if (ids.length === 0) return [];
  const byId = new Map(
    contactsWhere(db, sql`where ${inList(sql`id`, ids)} order by id`).map((contact) => [contact.id, contact]),
  );
  return ids.flatMap((id) => byId.get(id) ?? []);
}

/** One page, oldest id first, optionally changed since a time, and the total. */
export function contactPage(db: Db, options: { since: number | null; limit: number; offset: number }) {
  const where = options.since === null ? sql`` : sql`where updated_at >= ${options.since}`;
  // Without `since` the page is every contact between its first id and its last: their values are a range.
  const tail = sql`${where} order by id limit ${options.limit} offset ${options.offset}`;
  const items = contactsWhere(db, tail, options.since === null);
  const total = db.get<{ n: number }>(sql`select count(*) as n from contacts ${where}`)?.n ?? 0;
  return { items, total };
}

type ContactRow = [
  id: number,
  displayName: string,
  birthday: string | null,
  labels: string,
  createdAt: number,
  updatedAt: number,
];

/**
 * The contacts `tail` selects (`where …`, `order by …`, `limit …` over `contacts`), in that order, with
 * every collection: two statements (the contacts, then their values in order) read as arrays and
 * assembled here, without drizzle's query building and row mapping (a page of 100 spent about a
 * fifth of its time in them; docs/performance.md). `contiguous`: `tail` selects every contact from
 * its first id to its last, so their values are read as that range of the key, not by a list of ids.
 */
function contactsWhere(db: Db, tail: SQL, contiguous = false): StoredContact[] {
  const rows = db.values<ContactRow>(
    sql`select id, display_name, birthday, labels, created_at, updated_at from contacts ${tail}`,
  );
  if (rows.length === 0) return [];
  const of = new Map<number, StoredContact>();
  const result = rows.map(([id, displayName, birthday, labels, createdAt, updatedAt]) => {
    const contact: StoredContact = {
      id,
      displayName,
      birthday,
      labels: JSON.parse(labels) as string[],
      emails: [],
      phones: [],
      addresses: [],
      createdAt,
      updatedAt,
    };
    of.set(id, contact);
    return contact;
  });
  const which = contiguous
    ? sql`contact_id between ${rows[0]![0]} and ${rows[rows.length - 1]![0]}`
    : inList(
        sql`contact_id`,
        rows.map((row) => row[0]),
      );
  const values = db.values<[contactId: number, kind: ContactValueKind, value: string]>(
    sql`select contact_id, kind, value from contact_values where ${which} order by contact_id, kind, position`,
  );
  for (const [contactId, kind, value] of values) {
    const contact = of.get(contactId);
    if (contact === undefined) continue; // a value left without its contact is no contact's
    (kind === "email" ? contact.emails : kind === "phone" ? contact.phones : contact.addresses).push(value);
  }
  return result;
}

/** Contacts having `e164` among their phones (call-lookup's details). */
export function contactsWithPhone(db: Db, e164: string): StoredContact[] {
  const ids = db
    .selectDistinct({ id: contactValues.contactId })
    .from(contactValues)
    .where(and(eq(contactValues.kind, "phone"), eq(contactValues.value, e164)))
    .all()
    .map((row) => row.id)
    .sort((a, b) => a - b);
  return readContacts(db, ids);
}

/** One page of the deletions at or after `since`, oldest first, and the total. */
export function deletedPage(db: Db, options: { since: number; limit: number; offset: number }) {
  const where = gte(contactTombstones.deletedAt, new Date(options.since));
  const rows = db
    .select()
    .from(contactTombstones)
    .where(where)
    .orderBy(asc(contactTombstones.deletedAt), asc(contactTombstones.contactId))
    .limit(options.limit)
    .offset(options.offset)
    .all();
  const total = db.select({ n: count() }).from(contactTombstones).where(where).get()?.n ?? 0;
  return { items: rows.map((row) => ({ id: row.contactId, deletedAt: row.deletedAt.getTime() })), total };
}

/** The newest change of a contact (ms), or null. */
export const lastContactUpdate = (db: Db): number | null =>
  db
    .select({ at: contacts.updatedAt })
    .from(contacts)
    .orderBy(sql`updated_at desc`)
    .limit(1)
    .get()
    ?.at.getTime() ?? null;

/** A contact phone's bucket in SQL: `bucketOf` (domain/trust-records.ts) of `contact_values.value`. */
const valueBucket = sql<number>`cast(substr(${contactValues.value}, -2) as integer)`;

/**
 * The phones of the contacts by bucket (their last two digits: `bucketOf`), in one read: the keys of
 * one change are computed from it together (index-keys.ts), where a read per bucket read every phone
 * of the book again each time (no index serves a bucket).
 */
export function phonesByBucket(db: Db): Map<number, string[]> {
  const buckets = new Map<number, string[]>();
  for (const { value } of db
    .selectDistinct({ value: contactValues.value })
    .from(contactValues)
    .where(eq(contactValues.kind, "phone"))
    .all()) {
    const bucket = bucketOf(value);
    const phones = buckets.get(bucket);
    if (phones) phones.push(value);
    else buckets.set(bucket, [value]);
  }
  return buckets;
}

/** The buckets (0–99) holding at least one contact phone, ascending. */
export const nonEmptyBuckets = (db: Db): number[] =>
  db
    .all<{ b: number }>(sql`select distinct ${valueBucket} as b from ${contactValues} where kind = 'phone' order by b`)
    .map((row) => row.b);
