import type { Facts, Profile } from "../../domain/facts";

/*
 * The person's own account as `GET /me` shows it (docs/decisions.md, "Me"),
 * answered from the facts D1 told this object (docs/architecture.md, "Names
 * travel with facts"): no D1 statement once the object holds them.
 */

export type OwnAccount = {
  id: number;
  first_name: string;
  middle_name: string | null;
  last_name: string;
  secure_number: { country_code: string; number: string; e164: string } | null;
  companies: { id: number; name: string; roles: string[] }[];
  /** The facts version it was read from (not shown by `GET /me`; another object's card carries it). */
  version: number;
};

/** The account of person `id` from their facts (with the profile and, with a number, its parts); null: none. */
export function ownAccount(id: number, facts: (Facts & { profile: Profile }) | null): OwnAccount | null {
  if (!facts) return null;
  const { first_name, middle_name, last_name, companies } = facts.profile;
  return {
    id,
    first_name,
    middle_name,
    last_name,
    secure_number:
      facts.e164 === null ? null : { country_code: facts.countryCode!, number: facts.number!, e164: facts.e164 },
    companies,
    version: facts.version,
  };
}
