import type { IndexLinks, LinkCard, LinkedPerson } from "../../domain/contact-links";
import { KEY_KINDS } from "../../domain/key-kinds";
import type { StoredContact } from "./api";
import { LINKS_FRESH_MS, LINKS_KEPT } from "./limits";

/*
 * The links of this person's contacts as the trust index last named them (docs/architecture.md,
 * "Contacts link through the index"): for each phone and email a page read, the people its `num:`
 * or `eml:` key named (or nobody) with their `lnk:` cards, and the owner's own card, each with the
 * time the Worker read it. A page within `LINKS_FRESH_MS` of that read takes them with its contacts
 * (one RPC) and reads KV only for the values not kept; what it read comes back (`keep`) after its
 * answer. Whether a linked person knows the owner is decided by the page from the cards and the
 * mirror as it is then, never kept here.
 *
 * In memory, not in the object's SQLite: it is a copy of KV's, so losing it (the object evicted or
 * restarted) costs only the next page's KV reads; storing it would cost a migration and a
 * written row per value for data that is stale within a minute. At most `LINKS_KEPT` values, the
 * oldest read going first.
 */

type Kept<T> = { at: number; value: T };

/** Read at most `LINKS_FRESH_MS` before `now`; a time ahead of `now` (a clock set back) is not trusted: read again. */
const fresh = (kept: Kept<unknown>, now: number) => kept.at <= now && now - kept.at < LINKS_FRESH_MS;

export class KeptLinks {
  private readonly values = new Map<string, Kept<LinkedPerson[]>>();
  private owner: Kept<LinkCard> | null = null;

  /** The links kept for these contacts' phones and emails that are still fresh at `now` (ms). */
  of(contacts: StoredContact[], now = Date.now()): IndexLinks {
    const links: IndexLinks = { values: {} };
    const owner = this.ownerCard(now);
    if (owner !== undefined) links.owner = owner;
    const add = (key: string) => {
      const people = this.value(key, now);
      if (people !== undefined) links.values[key] = people;
    };
    for (const contact of contacts) {
      for (const phone of contact.phones) add(KEY_KINDS.num.key(phone));
      for (const email of contact.emails) add(KEY_KINDS.eml.key(email));
    }
    return links;
  }

  /** The owner's own card, if kept and still fresh at `now` (ms). */
  ownerCard(now = Date.now()): LinkCard | undefined {
    return this.owner && fresh(this.owner, now) ? this.owner.value : undefined;
  }

  /** The people the value of index key `key` names, if kept and still fresh at `now` (ms); a stale one is dropped. */
  value(key: string, now = Date.now()): LinkedPerson[] | undefined {
    const kept = this.values.get(key);
    if (kept === undefined) return undefined;
    if (fresh(kept, now)) return kept.value;
    this.values.delete(key);
    return undefined;
  }

  /** Keeps links the Worker read from the index at `readAt` (ms); an older read never replaces a newer one. */
  keep(links: IndexLinks, readAt: number, now = Date.now()): void {
    const at = Math.min(readAt, now);
    if (now - at >= LINKS_FRESH_MS) return;
    // Newer than this read, and not ahead of `now` (a clock set back): kept.
    const newer = (kept: Kept<unknown> | null | undefined) => kept != null && kept.at > at && kept.at <= now;
    if (links.owner && !newer(this.owner)) this.owner = { at, value: links.owner };
    for (const [key, people] of Object.entries(links.values)) {
      if (newer(this.values.get(key))) continue;
      // Deleted, then set: the map's order stays the order of the reads, oldest first.
      this.values.delete(key);
      this.values.set(key, { at, value: people });
    }
    for (const key of this.values.keys()) {
      if (this.values.size <= LINKS_KEPT) break;
      this.values.delete(key);
    }
  }

  /** Everything forgotten (the person is erased). */
  forget(): void {
    this.values.clear();
    this.owner = null;
  }
}
