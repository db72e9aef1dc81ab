/*
 * What a contact's phone or email links to (docs/architecture.md, "Contacts link through the
 * index"), in the shape both sides of the Person object's RPC use: the Worker reads it from the
 * trust index's `num:`, `eml:` and `lnk:` keys (services/trust-index/contacts.ts), and the owner's
 * object keeps what was read for a while (objects/person/links.ts), so the next page within
 * `LINKS_FRESH_MS` (objects/person/limits.ts) reads no KV key.
 */

/**
 * `lnk:` value: `a` avatar url, `r` risk score, `e` 1 when they can be reached end to end, `c` their
 * companies (whether they know a contact's owner: docs/security.md, "What a stranger learns").
 */
export type LinkCard = { a: string | null; r: number; e: 0 | 1; c: number[] };

/** A platform person a contact's phone or email names, with their `lnk:` card as it was read. */
export type LinkedPerson = { personId: number; card: LinkCard };

/**
 * Links as the index named them: `values`, by the value's index key (`num:<e164>`, `eml:<email>`),
 * the people each names (none: nobody); `owner`, the owner's own card (its companies decide who
 * knows them), read together with the mark `idx:contacts`, so it also stands for "the index can
 * answer". Whether a linked person knows the owner is no part of it: the page decides that from the
 * cards' companies and the owner's mirror as it is then, so a trust taken back shows at once.
 */
export type IndexLinks = { owner?: LinkCard; values: Record<string, LinkedPerson[]> };
