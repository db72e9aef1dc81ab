import { lt, sql, type SQL } from "drizzle-orm";
import { inList } from "../../db/sql";
import type { DrizzleSqliteDODatabase } from "drizzle-orm/durable-sqlite";
import { MARKED, type HeldCounts, type MarkedKind, type MovedContact, type MovedRows } from "./api";
import * as book from "./contacts";
import * as keys from "./index-keys";
import {
  blockedCalls,
  companyTrust,
  contacts,
  contactTombstones,
  feed,
  personTrust,
  trustedBy,
  trustRequests,
  type ContactValueKind,
} from "./schema";
import { receiveMirror } from "./mirror";

/*
 * THE ONE-TIME MOVE FROM D1 (docs/architecture.md, "The one-time move from
 * D1"): the object's side of services/person-moves.ts. Everything of the move
 * inside the object is here, plus its three RPC methods in person.ts
 * (`importRows`, `finishMove`, `counts`) and its types in api.ts.
 * Once every person is `moved`, all of it goes together with the D1 tables:
 * see docs/move-removal.md.
 */

type Db = DrizzleSqliteDODatabase;

/** Ids below this came from D1 (the move); ids this object makes are time-based and far above (ids.ts). */
export const MOVED_ID_LIMIT = 2 ** 40;
/** The object's own key-value storage: set once the one-time move of this person finished. */
const MOVE_FINISHED = "move:finished";

const markKey = (kind: MarkedKind) => `move:mark:${kind}`;

/** The largest D1 key of `kind` imported so far (0: none). */
const markOf = (storage: DurableObjectStorage, kind: MarkedKind): number => storage.kv.get<number>(markKey(kind)) ?? 0;

/** Of `rows`, those above `kind`'s mark (never imported); the mark moves up to the largest of them. */
function neverImported<T>(storage: DurableObjectStorage, kind: MarkedKind, rows: T[], key: (row: T) => number): T[] {
  const mark = markOf(storage, kind);
  const fresh = rows.filter((row) => key(row) > mark);
  if (fresh.length > 0) storage.kv.put(markKey(kind), Math.max(mark, ...fresh.map(key)));
  return fresh;
}

/** Whether the move of this person finished (`finishMove`): later imports change nothing. */
export const finished = (storage: DurableObjectStorage): boolean => storage.kv.get(MOVE_FINISHED) === true;

/** The move of this person's D1 rows finished. */
export const finish = (storage: DurableObjectStorage): void => storage.kv.put(MOVE_FINISHED, true);

/** Whether a chunk holds rows the retention alarm looks after. */
export const needsCare = (rows: MovedRows): boolean =>
  (rows.feed?.length ?? 0) + (rows.blockedCalls?.length ?? 0) + (rows.tombstones?.length ?? 0) > 0;

/**
 * Rows moved in from D1: inserted under their D1 ids, which no id made here
 * can equal (ids here are time-based and far larger); a row already here is
 * left as it is, and one imported before is not imported again (`MARKED`), so
 * a repeated chunk or a rerun changes nothing. The keys the contacts
 * and decisions touch are marked due. Run in one transaction; false (nothing
 * imported) once the person's move finished.
 */
export function importRows(db: Db, storage: DurableObjectStorage, given: MovedRows): boolean {
  if (finished(storage)) return false;
  const rows: MovedRows = {
    ...given,
    feed: neverImported(storage, "feed", given.feed ?? [], (row) => row.id),
    blockedCalls: neverImported(storage, "blockedCalls", given.blockedCalls ?? [], (row) => row.id),
    trustRequests: neverImported(storage, "trustRequests", given.trustRequests ?? [], (row) => row.id),
    contacts: neverImported(storage, "contacts", given.contacts ?? [], (row) => row.id),
    decisions: neverImported(storage, "decisions", given.decisions ?? [], (row) => row.personId),
    companySettings: neverImported(storage, "companySettings", given.companySettings ?? [], (row) => row.companyId),
  };
  if (rows.contacts!.length > 0) {
    importContacts(db, rows.contacts!);
    keys.markStale(
      db,
      keys.keysOfPhones(
        db,
        rows.contacts!.flatMap((contact) => contact.phones),
      ),
    );
  }
  for (const tombstone of rows.tombstones ?? []) {
    db.insert(contactTombstones)
      .values({ contactId: tombstone.contactId, deletedAt: new Date(tombstone.deletedAt) })
      .onConflictDoNothing()
      .run();
  }
  for (const decision of rows.decisions ?? []) {
    db.insert(personTrust)
      .values({ ...decision, updatedAt: new Date(decision.updatedAt) })
      .onConflictDoNothing()
      .run();
  }
  for (const setting of rows.companySettings ?? []) {
    db.insert(companyTrust)
      .values({ ...setting, updatedAt: new Date(setting.updatedAt) })
      .onConflictDoNothing()
      .run();
  }
  for (const mirrored of rows.mirror ?? []) receiveMirror(db, mirrored.personId, mirrored.trusted, mirrored.decidedAt);
  if ((rows.decisions?.length ?? 0) + (rows.companySettings?.length ?? 0) > 0) {
    keys.markStale(db, keys.receiverKeys(db));
  }
  for (const request of rows.trustRequests ?? []) {
    db.insert(trustRequests)
      .values({
        ...request,
        decidedAt: request.decidedAt === null ? null : new Date(request.decidedAt),
        createdAt: new Date(request.createdAt),
        updatedAt: new Date(request.updatedAt),
      })
      .onConflictDoNothing()
      .run();
  }
  for (const row of rows.feed ?? []) {
    db.insert(feed)
      .values({ ...row, createdAt: new Date(row.createdAt) })
      .onConflictDoNothing()
      .run();
  }
  for (const call of rows.blockedCalls ?? []) {
    db.insert(blockedCalls)
      .values({ ...call, createdAt: new Date(call.createdAt) })
      .onConflictDoNothing()
      .run();
  }
  return true;
}

/**
 * Contacts moved in from D1 under their D1 ids; one already here is left as
 * it is, and one deleted here since (its tombstone) is not brought back.
 */
function importContacts(db: Db, all: MovedContact[]) {
  const deleted = new Set(
    db
      .select({ id: contactTombstones.contactId })
      .from(contactTombstones)
      .where(
        inList(
          contactTombstones.contactId,
          all.map((row) => row.id),
        ),
      )
      .all()
      .map((row) => row.id),
  );
  const moved = all.filter((row) => !deleted.has(row.id));
  book.insertContacts(
    db,
    moved.map((row) => ({ ...row, createdAt: new Date(row.createdAt), updatedAt: new Date(row.updatedAt) })),
  );
  const values: [number, ContactValueKind, number, string][] = [];
  for (const row of moved) {
    row.emails.forEach((value, i) => values.push([row.id, "email", i, value]));
    row.phones.forEach((value, i) => values.push([row.id, "phone", i, value]));
    row.addresses.forEach((value, i) => values.push([row.id, "address", i, value]));
  }
  book.insertValues(db, values);
}

/**
 * How many rows the object holds, per kind, and how many of them came from
 * D1 (their ids are below `MOVED_ID_LIMIT`; ids made here are far above), and
 * its marks (given D1's `largest` keys, a kind without a mark adopts it).
 */
export function counts(db: Db, storage: DurableObjectStorage, largest?: Record<MarkedKind, number>): HeldCounts {
  // For the comparison: a kind imported before the object kept marks (by an older deployment, every copy
  // stage run) takes D1's largest key as its mark, so a rerun brings none of it back either. A kind with
  // a mark keeps it: a row above it was missed, and a rerun imports it.
  if (largest) {
    for (const kind of MARKED) {
      if (storage.kv.get(markKey(kind)) === undefined && largest[kind] > 0)
        storage.kv.put(markKey(kind), largest[kind]);
    }
  }
  const moved = (table: typeof feed | typeof blockedCalls | typeof trustRequests | typeof contacts) =>
    rowsIn(db, table, lt(table.id, MOVED_ID_LIMIT));
  return {
    feed: rowsIn(db, feed),
    blockedCalls: rowsIn(db, blockedCalls),
    movedFeed: moved(feed),
    movedBlockedCalls: moved(blockedCalls),
    movedTrustRequests: moved(trustRequests),
    movedContacts: moved(contacts),
    tombstones: rowsIn(db, contactTombstones),
    decisions: rowsIn(db, personTrust),
    companySettings: rowsIn(db, companyTrust),
    mirror: rowsIn(db, trustedBy),
    finished: finished(storage),
    marks: Object.fromEntries(MARKED.map((kind) => [kind, markOf(storage, kind)])) as Record<MarkedKind, number>,
  };
}

/** How many rows a table of the object holds (those `where` selects, if given). */
function rowsIn(
  db: Db,
  table:
    | typeof feed
    | typeof blockedCalls
    | typeof trustRequests
    | typeof contacts
    | typeof contactTombstones
    | typeof personTrust
    | typeof companyTrust
    | typeof trustedBy,
  where?: SQL,
): number {
  return (
    db
      .select({ n: sql<number>`count(*)` })
      .from(table)
      .where(where)
      .get()?.n ?? 0
  );
}
