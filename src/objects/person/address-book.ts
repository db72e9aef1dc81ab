import type { DrizzleSqliteDODatabase } from "drizzle-orm/durable-sqlite";
import type { Answer, ContactInput, ContactListing, ContactListingOptions, ContactRead } from "./api";
import { listing as renderedOrRead } from "./contact-listing";
import * as book from "./contacts";
import * as keys from "./index-keys";
import type { KeptLinks } from "./links";
import { mirrorForRead, trustedMe } from "./mirror";

/*
 * The person's contacts as the object's methods change and answer them
 * (docs/contacts-sync.md): each change with the index keys it touches marked
 * due, in the caller's one transaction; each read with who trusted this
 * person (`trustedMe`: the linking of contacts to people reads it, they know
 * the owner). The statements themselves are in contacts.ts.
 */

type Db = DrizzleSqliteDODatabase;

/**
 * A sync by person `me`: elements with an `id` update that contact, the
 * others create one; all or nothing (a bad id or the quota refuses it all).
 * The quota is exact: one request at a time runs in the object.
 */
export function save(db: Db, me: number, inputs: ContactInput[], now: number): Answer<ContactRead> {
  const creating = inputs.filter((input) => input.id === undefined).length;
  const refused = book.checkUpdatable(db, inputs) ?? book.checkRoom(db, creating);
  if (refused) return refused;
  const { ids, touchedPhones } = book.writeContacts(db, me, inputs, now);
  keys.markStale(db, keys.keysOfPhones(db, touchedPhones));
  return { ok: true, ...read(db, ids) };
}

/** Deletes contacts (`ids`, or every one), each remembered by a tombstone; answers the ids deleted. */
export function remove(db: Db, ids: number[] | "all", now: number): number[] {
  const { deleted, touchedPhones } = book.deleteContacts(db, ids, now);
  keys.markStale(db, keys.keysOfPhones(db, touchedPhones));
  return deleted;
}

/** Contacts of `ids` (those that are here), in that order. */
export const read = (db: Db, ids: number[]): ContactRead => ({
  items: book.readContacts(db, ids),
  total: 0,
  ...mirrorForRead(db),
});

/** One page of contacts, oldest id first, optionally changed since `since` (ms). */
export const page = (db: Db, options: { since: number | null; limit: number; offset: number }): ContactRead => ({
  ...book.contactPage(db, options),
  ...mirrorForRead(db),
});

/** One page for `GET /contacts` (contact-listing.ts): rendered here when `links` keeps all it needs. */
export const listing = (
  db: Db,
  ownerId: number | null,
  links: KeptLinks,
  options: ContactListingOptions,
): ContactListing => renderedOrRead(db, ownerId, links, page(db, options), options.include);

/** The contacts having `e164` among their phones, and who of `among` trusted this person. */
export const withPhone = (db: Db, e164: string, among: number[]): ContactRead => ({
  items: book.contactsWithPhone(db, e164),
  total: 0,
  trustedMe: trustedMe(db, among),
  trustedMeOf: among,
});
