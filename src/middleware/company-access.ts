import { and, eq, sql } from "drizzle-orm";
import { createMiddleware } from "hono/factory";
import { companies, membershipRoles, memberships, roles } from "../db/schema";
import { badRequest, forbidden, notFound } from "../lib/errors";
import { parseId } from "../lib/ids";
import { grants, type Permission } from "../lib/permissions";
import { companyColumns } from "../services/companies";
import type { Deps } from "../services/deps";
import type { AppEnv, CompanyAccess } from "../types";
import { assertAllowed } from "./auth";

/**
 * Guards `/companies/{company_id}/…`: the caller must be a person who is a
 * member of that company (else 404, so other tenants stay invisible), the
 * company must be enabled (a company the platform operator disabled is a 403
 * for its members, docs/decisions.md), and the caller's roles must grant
 * `permission` (else 403). Resolves membership, permissions and the company's
 * own row in one query and leaves them on `c.var.company` for the handler's
 * SQL filters (and for the company read, which needs nothing else).
 */
export function companyAccess(permission: Permission) {
  return createMiddleware<AppEnv>(async (c, next) => {
    const principal = assertAllowed(c.var.principal, c.var.authFailure, { person: true });
    if (principal.kind !== "person") throw forbidden("this endpoint needs a person token");

    const raw = c.req.param("company_id") ?? "";
    const companyId = parseId(raw);
    if (companyId === null) throw notFound(`company ${JSON.stringify(raw)} does not exist`);

    c.set("company", await resolveCompanyAccess(c.var.deps, principal.personId, companyId, permission));
    await next();
  });
}

/**
 * Guards the forms without a company segment (`/licenses…`, docs/decisions.md):
 * they act on the caller's company when the caller belongs to exactly one,
 * else 400 pointing at the `/companies/{company_id}/…` form. The permission is
 * checked in that company exactly as `companyAccess` does.
 */
export function soleCompanyAccess(permission: Permission, companyForm: string) {
  return createMiddleware<AppEnv>(async (c, next) => {
    const principal = assertAllowed(c.var.principal, c.var.authFailure, { person: true });
    if (principal.kind !== "person") throw forbidden("this endpoint needs a person token");

    const rows = await c.var.deps.db
      .select({ companyId: memberships.companyId })
      .from(memberships)
      .where(eq(memberships.personId, principal.personId))
      .limit(2)
      .all();
    if (rows.length !== 1) {
      throw badRequest(
        `${rows.length === 0 ? "you belong to no company" : "you belong to several companies"}; name one with ${companyForm}`,
      );
    }
    c.set("company", await resolveCompanyAccess(c.var.deps, principal.personId, rows[0]!.companyId, permission));
    await next();
  });
}

/** The person's standing in the company: 404 when not a member, 403 when it is disabled or without `permission`. */
export async function resolveCompanyAccess(
  { db }: Deps,
  personId: number,
  companyId: number,
  permission: Permission,
): Promise<CompanyAccess> {
  const rows = await db
    .select({
      membershipId: memberships.id,
      permissions: roles.permissions,
      ...companyColumns,
      // The version of the employee list (services/employees/list.ts), read in this round trip.
      listVersion: sql<string | null>`(select version from company_list_versions where company_id = ${companies.id})`,
    })
    .from(memberships)
    .innerJoin(companies, eq(companies.id, memberships.companyId))
    .leftJoin(membershipRoles, eq(membershipRoles.membershipId, memberships.id))
    .leftJoin(roles, and(eq(roles.id, membershipRoles.roleId), eq(roles.companyId, memberships.companyId)))
    .where(and(eq(memberships.companyId, companyId), eq(memberships.personId, personId)))
    .all();

  if (rows.length === 0) throw notFound(`company ${companyId} does not exist`);
  if (rows[0]!.status === "disabled") {
    throw forbidden(
      `company ${companyId} is disabled by the platform operator; it cannot be read or changed until it is enabled again`,
    );
  }
  const permissions = [...new Set(rows.flatMap((row) => row.permissions ?? []))];
  if (!grants(permissions, permission)) {
    throw forbidden(
      `this needs the \`${permission}\` permission, which your roles in company ${companyId} do not grant`,
    );
  }
  const { membershipId, id, name, status, url, logo, scanner, scansInObject, listVersion } = rows[0]!;
  return {
    companyId,
    membershipId,
    permissions,
    listVersion,
    company: { id, name, status, url, logo, scanner, scansInObject },
  };
}
