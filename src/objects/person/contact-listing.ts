import type { DrizzleSqliteDODatabase } from "drizzle-orm/durable-sqlite";
import {
  contactsView,
  linkMatches,
  unresolvedOf,
  valueKeysOf,
  type ContactCollection,
  type LinkMatch,
} from "../../domain/contact-view";
import type { ContactListing, ContactRead, LinkedPerson } from "./api";
import type { KeptLinks } from "./links";
import { trustedMe } from "./mirror";

/*
 * `GET /contacts` answered by the owner's object itself when it keeps every link the page needs
 * (links.ts): the page rendered here as the API shows it (domain/contact-view.ts, the renderer the
 * Worker uses otherwise), so it crosses the RPC once, as the answer's JSON text, and the Worker sends
 * it as it is. Nothing of the answer is kept: each page is read and rendered afresh, and whether a
 * linked person knows the owner is decided from the mirror as it is now (docs/performance.md).
 */

type Db = DrizzleSqliteDODatabase;

/**
 * The JSON text of `read`'s contacts as owner `ownerId`'s `GET /contacts` shows them, with the
 * collections of `include`; null when a phone or email of the page has no fresh link in `links`, or
 * the owner's card is not kept (the Worker then reads the index, or D1, and renders the page).
 */
function renderedPage(
  db: Db,
  ownerId: number,
  links: KeptLinks,
  read: ContactRead,
  include: ContactCollection[],
): string | null {
  // The values in the Worker's order (services/contacts.ts `contactsRead`), so the same links win.
  const phones = [...new Set(read.items.flatMap((contact) => contact.phones))];
  const emails = [...new Set(read.items.flatMap((contact) => contact.emails))];
  let rows: LinkMatch[] = [];
  if (phones.length + emails.length > 0) {
    const now = Date.now();
    const owner = links.ownerCard(now);
    if (owner === undefined) return null;
    const valueKeys = valueKeysOf(phones, emails);
    const named = new Map<string, LinkedPerson[]>();
    for (const { key } of valueKeys) {
      const people = links.value(key, now);
      if (people === undefined) return null;
      named.set(key, people);
    }
    rows = linkMatches(ownerId, owner, valueKeys, (key) => named.get(key), read.trustedMe);
  }
  const ask = unresolvedOf(rows, read.trustedMeOf);
  return JSON.stringify(contactsView(read.items, rows, ask.length > 0 ? trustedMe(db, ask) : [], new Set(include)));
}

/**
 * `contactListing`'s answer (person.ts): the page rendered here (`body`) when this object knows its
 * person (`ownerId`) and keeps every link the page needs, else the page with the fresh links it keeps
 * as JSON text (`read`), which crosses the RPC cheaper than its structured clone (docs/performance.md).
 */
export function listing(
  db: Db,
  ownerId: number | null,
  links: KeptLinks,
  read: ContactRead,
  include: ContactCollection[],
): ContactListing {
  const body = ownerId === null ? null : renderedPage(db, ownerId, links, read, include);
  return body === null
    ? { read: JSON.stringify({ ...read, links: links.of(read.items) }) }
    : { body, total: read.total };
}
