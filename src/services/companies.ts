import { and, asc, eq } from "drizzle-orm";
import type { Db } from "../db/client";
import { companies, roles } from "../db/schema";
import { refusal, type Answer } from "../lib/answer";
import { badRequest } from "../lib/errors";
import { DEFAULT_ROLES } from "../lib/permissions";
import type { Deps } from "./deps";

export type CompanyRow = Pick<
  typeof companies.$inferSelect,
  "id" | "name" | "status" | "url" | "logo" | "scanner" | "scansInObject"
>;

/**
 * The caller's standing in the company of a `/companies/{company_id}/…` path,
 * and the company itself (read by the same query: a company read needs no other).
 */
export type CompanyAccess = {
  companyId: number;
  membershipId: number;
  permissions: string[];
  /** The company's employee-list version, read with the access check (null: none recorded). */
  listVersion: string | null;
  company: CompanyRow;
};

/** Columns `toCompany` reads. */
export const companyColumns = {
  id: companies.id,
  name: companies.name,
  status: companies.status,
  url: companies.url,
  logo: companies.logo,
  scanner: companies.scanner,
  /** Where the company's scan side lives (its object, or D1's tables): the exposure reads follow it. */
  scansInObject: companies.scansInObject,
};

/** Columns of the short company reference `{id, name, slug, logo, url}`. */
export const companyRefColumns = {
  id: companies.id,
  name: companies.name,
  slug: companies.slug,
  logo: companies.logo,
  url: companies.url,
};

/** The short company reference `{id, name, slug, logo, url}` (OpenAPI component `CompanyRef`; domain/scan-payloads.ts). */
export { toCompanyRef, type CompanyRef } from "../domain/scan-payloads";

/**
 * The API's Company (OpenAPI component `Company`; docs/decisions.md, "Companies and sites"), also
 * used for people-search sites.
 */
export const toCompany = (row: CompanyRow) => ({
  id: row.id,
  name: row.name,
  status: row.status,
  url: row.url,
  logo: row.logo ?? "",
  scanner: row.scanner,
});

/** The company's roles, oldest first: one query for listing them and for resolving names. */
export const companyRoles = (db: Db, companyId: number) =>
  db
    .select({ id: roles.id, name: roles.name, permissions: roles.permissions })
    .from(roles)
    .where(eq(roles.companyId, companyId))
    .orderBy(asc(roles.id));

export async function listRoles({ db }: Deps, companyId: number) {
  return (await companyRoles(db, companyId)).map(({ name, permissions }) => ({ name, permissions }));
}

/** The role called `name` (case-insensitively) among `available`; a name the company lacks is a 400. */
export function roleNamed<T extends { name: string }>(available: T[], companyId: number, name: string): T {
  const role = available.find((entry) => entry.name.toLowerCase() === name.toLowerCase());
  if (!role) {
    throw badRequest(
      `company ${companyId} has no role ${JSON.stringify(name)}; its roles are ${available.map((r) => `\`${r.name}\``).join(", ") || "none"}`,
    );
  }
  return role;
}

/** People-search sites are global: every tenant sees the same list. */
export async function listSites({ db }: Deps) {
  const rows = await db
    .select(companyColumns)
    .from(companies)
    .where(eq(companies.kind, "site"))
    .orderBy(asc(companies.name), asc(companies.id))
    .all();
  return rows.map(toCompany);
}

/** A people-search site of the catalog, or a 404 refusal. */
export async function getSite({ db }: Deps, siteId: number): Promise<Answer<{ site: ReturnType<typeof toCompany> }>> {
  const row = await db
    .select(companyColumns)
    .from(companies)
    .where(and(eq(companies.id, siteId), eq(companies.kind, "site")))
    .get();
  return row ? { ok: true, site: toCompany(row) } : refusal(404, `site ${siteId} does not exist`);
}

/** The roles every employer company starts with (docs/decisions.md). */
export const defaultRoleRows = (companyId: number) =>
  DEFAULT_ROLES.map((role) => ({ companyId, name: role.name, permissions: [...role.permissions] }));
