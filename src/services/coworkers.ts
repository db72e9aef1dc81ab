import { and, asc, eq } from "drizzle-orm";
import { inList } from "../db/sql";
import { companies, memberships, people } from "../db/schema";
import { refusal } from "../lib/answer";
import { toCompanyRef } from "./companies";
import type { Deps } from "./deps";

/**
 * Every company `personId` belongs to (or only `companyId`) with all its
 * employees (OpenAPI component `CompanyWithEmployees`; docs/decisions.md,
 * "Contacts"), companies by id, employees by name. Two queries,
 * whatever the number of companies.
 */
export async function companiesWithEmployees({ db }: Deps, personId: number, companyId?: number) {
  const mine = await db
    .select({ id: companies.id, name: companies.name, slug: companies.slug, logo: companies.logo, url: companies.url })
    .from(memberships)
    .innerJoin(companies, eq(companies.id, memberships.companyId))
    .where(and(eq(memberships.personId, personId), companyId === undefined ? undefined : eq(companies.id, companyId)))
    .orderBy(asc(companies.id))
    .all();
  if (mine.length === 0) return [];

  const employees = await db
    .select({
      companyId: memberships.companyId,
      id: people.id,
      first_name: people.firstName,
      last_name: people.lastName,
    })
    .from(memberships)
    .innerJoin(people, eq(people.id, memberships.personId))
    .where(
      inList(
        memberships.companyId,
        mine.map((company) => company.id),
      ),
    )
    .orderBy(asc(people.lastName), asc(people.firstName), asc(people.id))
    .all();

  return mine.map((company) => ({
    company: toCompanyRef(company),
    employees: employees
      .filter((employee) => employee.companyId === company.id)
      .map(({ id, first_name, last_name }) => ({ id, first_name, last_name })),
  }));
}

/** One company of the person's with its employees, or a 404 refusal when they do not belong to it. */
export async function companyWithEmployees(deps: Deps, personId: number, companyId: number) {
  const [entry] = await companiesWithEmployees(deps, personId, companyId);
  return entry ? { ok: true as const, entry } : refusal(404, `company ${companyId} does not exist`);
}
