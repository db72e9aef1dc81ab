import { asc, eq, sql } from "drizzle-orm";
import { companies, membershipRoles, memberships, people, roles, secureNumbers } from "../db/schema";
import type { Deps } from "./deps";

/**
 * The caller's own account as `GET /me` answers it (docs/decisions.md,
 * "Me"): their names, secure number and companies with the roles they hold,
 * read in one D1 batch. Null when the person is gone (the token outlived them
 * within the token cache's window).
 */
export async function ownAccount(deps: Deps, personId: number) {
  const [person, numbers, places] = await deps.db.batch([
    deps.db
      .select({
        id: people.id,
        first_name: people.firstName,
        middle_name: people.middleName,
        last_name: people.lastName,
      })
      .from(people)
      .where(eq(people.id, personId)),
    deps.db
      .select({ country_code: secureNumbers.countryCode, number: secureNumbers.number, e164: secureNumbers.e164 })
      .from(secureNumbers)
      .where(eq(secureNumbers.personId, personId))
      .limit(1),
    deps.db
      // Aliased: D1 answers a batch's rows by column name, and both are `name`.
      .select({
        id: companies.id,
        name: sql<string>`${companies.name}`.as("company_name"),
        role: sql<string | null>`${roles.name}`.as("role_name"),
      })
      .from(memberships)
      .innerJoin(companies, eq(companies.id, memberships.companyId))
      .leftJoin(membershipRoles, eq(membershipRoles.membershipId, memberships.id))
      .leftJoin(roles, eq(roles.id, membershipRoles.roleId))
      .where(eq(memberships.personId, personId))
      .orderBy(asc(companies.id), asc(roles.name)),
  ]);
  const me = person[0];
  if (!me) return null;
  const byCompany = new Map<number, { id: number; name: string; roles: string[] }>();
  for (const place of places) {
    const company = byCompany.get(place.id) ?? { id: place.id, name: place.name, roles: [] };
    if (place.role !== null) company.roles.push(place.role);
    byCompany.set(place.id, company);
  }
  return { ...me, secure_number: numbers[0] ?? null, companies: [...byCompany.values()] };
}
