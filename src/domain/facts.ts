/**
 * What D1 says about a person, as their object is told it (docs/architecture.md,
 * "Fact versions"): their secure number (null: none) and the companies they
 * belong to, with D1's version of them (`people.facts_version`, which only grows).
 *
 * The heartbeat's part (docs/decisions.md, "The heartbeat reads no D1"): the
 * number's parts, the person's own update time and their memberships' newest
 * one (ms). Absent (facts built without them): the object holds them as
 * unknown and the heartbeat reads D1.
 *
 * The profile (`GET /me`, and the names the person's chats and trust
 * requests carry): null for a person D1 does not know; absent (facts built
 * without it) the object holds it as unknown and reads D1 once.
 */
export type Facts = {
  personId: number;
  e164: string | null;
  companies: number[];
  version: number;
  countryCode?: string | null;
  number?: string | null;
  userAt?: number | null;
  membershipAt?: number | null;
  profile?: Profile | null;
};

/** A person's names as D1 holds them. */
export type Names = { first_name: string; middle_name: string | null; last_name: string };

/**
 * What `GET /me` shows of a person's account beside their secure number
 * (docs/decisions.md, "Me"): their names and their companies (by id) with
 * the roles they hold there (by name). A person's object holds it among its
 * facts, so `GET /me` and the names its chats carry read no D1.
 */
export type Profile = Names & { companies: { id: number; name: string; roles: string[] }[] };

/**
 * What a person's object tells another about its person, with a chat or a
 * trust request (docs/architecture.md, "Names travel with facts"): who they
 * are, their names and their companies. The receiving object keeps the
 * newest it heard (by the facts `version`, so a card delayed on its way never replaces a newer one) and shows the names only to a reader its rule allows.
 */
export type PeerCard = Names & { id: number; companies: number[]; version: number };
