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

export class KeptLinks {
  private readonly values = new Map<string, Kept<LinkedPerson[]>>();
  private owner: Kept<LinkCard> | null = null;

  /** The links kept for these contacts' phones and emails that are still fresh at `now` (ms). */
  of(contacts: StoredContact[], now = Date.now()): IndexLinks {
    // A time ahead of `now` (a clock set back) is not trusted: read again.
    const fresh = (kept: Kept<unknown>) => kept.at <= now && now - kept.at < LINKS_FRESH_MS;
    const links: IndexLinks = { values: {} };
    if (this.owner && fresh(this.owner)) links.owner = this.owner.value;
    for (const contact of contacts) {
      for (const key of [...contact.phones.map(KEY_KINDS.num.key), ...contact.emails.map(KEY_KINDS.eml.key)]) {
        const kept = this.values.get(key);
        if (kept === undefined) continue;
        if (fresh(kept)) links.values[key] = kept.value;
        else this.values.delete(key);
      }
    }
    return links;
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
