/**
 * What D1 says about a person, as their object is told it (docs/architecture.md,
 * "Fact versions"): their secure number (null: none) and the companies they
 * belong to, with D1's version of them (`people.facts_version`, which only grows).
 *
 * The heartbeat's part (docs/decisions.md, "The heartbeat reads no D1"): the
 * number's parts, the person's own update time and their memberships' newest
 * one (ms). Absent (facts built without them): the object holds them as
 * unknown and the heartbeat reads D1.
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
};
