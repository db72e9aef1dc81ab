import { and, eq } from "drizzle-orm";
import { createMiddleware } from "hono/factory";
import { membershipRoles, memberships, roles } from "../db/schema";
import { forbidden, notFound } from "../lib/errors";
import { parseId } from "../lib/ids";
import { grants, type Permission } from "../lib/permissions";
import type { AppEnv } from "../types";
import { assertAllowed } from "./auth";

/**
 * Guards `/companies/{company_id}/…`: the caller must be a person who is a
 * member of that company (else 404, so other tenants stay invisible) and whose
 * roles grant `permission` (else 403). Resolves membership and permissions in
 * one query and leaves them on `c.var.company` for the handler's SQL filters.
 */
export function companyAccess(permission: Permission) {
  return createMiddleware<AppEnv>(async (c, next) => {
    const principal = assertAllowed(c.var.principal, c.var.authFailure, { person: true });
    if (principal.kind !== "person") throw forbidden("this endpoint needs a person token");

    const raw = c.req.param("company_id") ?? "";
    const companyId = parseId(raw);
    if (companyId === null) throw notFound(`company ${JSON.stringify(raw)} does not exist`);

    const rows = await c.var.db
      .select({ membershipId: memberships.id, permissions: roles.permissions })
      .from(memberships)
      .leftJoin(membershipRoles, eq(membershipRoles.membershipId, memberships.id))
      .leftJoin(roles, and(eq(roles.id, membershipRoles.roleId), eq(roles.companyId, memberships.companyId)))
      .where(and(eq(memberships.companyId, companyId), eq(memberships.personId, principal.personId)))
      .all();

    if (rows.length === 0) throw notFound(`company ${companyId} does not exist`);
    const permissions = [...new Set(rows.flatMap((row) => row.permissions ?? []))];
    if (!grants(permissions, permission)) {
      throw forbidden(
        `this needs the \`${permission}\` permission, which your roles in company ${companyId} do not grant`,
      );
    }
    c.set("company", { companyId, membershipId: rows[0]!.membershipId, permissions });
    await next();
  });
}
