import { and, eq, ne, sql, type SQL } from "drizzle-orm";
import { guardStatement } from "../../db/guard";
import { membershipRoles, memberships, roles } from "../../db/schema";
import { forbidden, notFound } from "../../lib/errors";
import { grants, type Permission } from "../../lib/permissions";
import type { CompanyAccess } from "../companies";
import { companyRoles, roleNamed } from "../companies";
import { lastSettingsWriter } from "./errors";
import type { Deps } from "../deps";

/**
 * Who may change whom: a member's standing, the rule that a caller covers
 * every permission of the member they change or remove and of the roles they
 * give, and the company's last holder of `write settings`.
 */

/** A member's standing in the company: their membership and the permissions their roles grant. */
export type Standing = { membershipId: number; licenseId: string | null; permissions: string[] };

export const WRITE_SETTINGS: Permission = "write settings";
const WRITE_EMPLOYEES: Permission = "write employees";

export async function standingOf({ db }: Deps, companyId: number, personId: number): Promise<Standing> {
  const rows = await db
    .select({ membershipId: memberships.id, licenseId: memberships.licenseId, permissions: roles.permissions })
    .from(memberships)
    .leftJoin(membershipRoles, eq(membershipRoles.membershipId, memberships.id))
    .leftJoin(roles, and(eq(roles.id, membershipRoles.roleId), eq(roles.companyId, memberships.companyId)))
    .where(and(eq(memberships.companyId, companyId), eq(memberships.personId, personId)))
    .all();
  if (rows.length === 0) throw notFound(`employee ${personId} does not exist`);
  const { membershipId, licenseId } = rows[0]!;
  return { membershipId, licenseId, permissions: [...new Set(rows.flatMap((row) => row.permissions ?? []))] };
}

/**
 * A caller may change or remove a member only when their own roles grant
 * every permission the member holds (403 otherwise), so an HR member cannot
 * demote, rewrite or remove an Admin.
 */
export function assertCovers(access: CompanyAccess, personId: number, target: Standing, action: "change" | "remove") {
  const missing = target.permissions.filter((permission) => !grants(access.permissions, permission as Permission));
  if (missing.length === 0) return;
  throw forbidden(
    `you cannot ${action} employee ${personId}: they hold ${missing.map((p) => `\`${p}\``).join(", ")}, which your roles do not grant`,
  );
}

/**
 * The batch that changes or removes a member starts with this guard (src/db/guard.ts): it rolls the
 * batch back when, at that moment, they are no longer a member (a removal committed first: a change
 * would otherwise rename, or give the company's emails to, someone who left), or hold a permission
 * the caller's roles do not grant, as when another request made them an Admin after this one read
 * their standing (an HR member would otherwise demote or remove an Admin). The caller's side is
 * asked as it is then too: their roles, not those read when the request began, must still grant
 * `write employees` and cover the member (an HR member demoted meanwhile changes no one). Its check,
 * asked after a rollback: the caller's permissions and the member's standing read again (404 when
 * the member is gone), and `assertCovers`.
 */
export function standingGuardStatement(
  deps: Deps,
  access: CompanyAccess,
  personId: number,
  action: "change" | "remove",
) {
  // The caller's permissions at this point of the batch (their membership's roles now).
  const held = sql`select p.value from ${membershipRoles} mr
    join ${roles} r on r.id = mr.role_id and r.company_id = ${access.companyId}, json_each(r.permissions) p
    where mr.membership_id = ${access.membershipId}`;
  return guardStatement(
    deps.db,
    "standing",
    sql`not exists (select 1 from ${memberships}
      where ${memberships.companyId} = ${access.companyId} and ${memberships.personId} = ${personId})
    or not exists (select 1 from (${held}) where value = ${WRITE_EMPLOYEES})
    or exists (
      select 1 from ${memberships}
      join ${membershipRoles} on ${membershipRoles.membershipId} = ${memberships.id}
      join ${roles} on ${roles.id} = ${membershipRoles.roleId} and ${roles.companyId} = ${memberships.companyId},
      json_each(${roles.permissions}) p
      where ${memberships.companyId} = ${access.companyId} and ${memberships.personId} = ${personId}
        and p.value not in (${held})
        and ('write ' || substr(p.value, instr(p.value, ' ') + 1)) not in (${held}))`,
    async () => {
      const now = { ...access, permissions: await permissionsOf(deps, access.membershipId) };
      if (!grants(now.permissions, WRITE_EMPLOYEES))
        throw forbidden(
          `this needs the \`${WRITE_EMPLOYEES}\` permission, which your roles in company ${access.companyId} no longer grant`,
        );
      assertCovers(now, personId, await standingOf(deps, access.companyId, personId), action);
    },
  );
}

/** The permissions membership `membershipId`'s roles grant now (none: it is gone). */
async function permissionsOf({ db }: Deps, membershipId: number): Promise<string[]> {
  const rows = await db
    .select({ permissions: roles.permissions })
    .from(membershipRoles)
    .innerJoin(roles, eq(roles.id, membershipRoles.roleId))
    .where(eq(membershipRoles.membershipId, membershipId))
    .all();
  return [...new Set(rows.flatMap((row) => row.permissions))];
}

/** In SQL: membership `id` of company `companyId` has a role of that company granting `permission` itself. */
export const membershipGrants = (id: SQL, companyId: SQL, permission: Permission) => sql`exists (
  select 1 from ${membershipRoles} mr join ${roles} r on r.id = mr.role_id and r.company_id = ${companyId}
  where mr.membership_id = ${id} and exists (select 1 from json_each(r.permissions) where value = ${permission}))`;

/** `roles.permissions` (a JSON array) contains `permission`. */
const roleGrants = (permission: Permission) =>
  sql`exists (select 1 from json_each(${roles.permissions}) where value = ${permission})`;

/**
 * 409 when the member is the company's last holder of `write settings`
 * (only they can manage its settings, roles and billing), for DELETE and for a
 * PUT whose roles drop it: the company would be locked out.
 */
export async function assertNotLastSettingsWriter(
  { db }: Deps,
  access: CompanyAccess,
  personId: number,
  target: Standing,
  action: "remove" | "demote",
) {
  const other = await db
    .select({ id: memberships.id })
    .from(memberships)
    .innerJoin(membershipRoles, eq(membershipRoles.membershipId, memberships.id))
    .innerJoin(roles, and(eq(roles.id, membershipRoles.roleId), eq(roles.companyId, memberships.companyId)))
    .where(
      and(eq(memberships.companyId, access.companyId), ne(memberships.personId, personId), roleGrants(WRITE_SETTINGS)),
    )
    .limit(1)
    .get();
  if (!other) throw lastSettingsWriter(access, personId, target.membershipId === access.membershipId, action);
}

/**
 * The batch that takes `write settings` from someone (removes them, or gives them roles without
 * it) starts with this guard (src/db/guard.ts): it rolls the batch back when, at that moment, they
 * hold it and no other member of the company does, as when two Admins demote each other at once,
 * or another request made them the last holder after this one read their standing. Its check,
 * asked after a rollback, is the one before the batch (`assertNotLastSettingsWriter`), asked again.
 */
export function settingsWriterGuardStatement(
  deps: Deps,
  access: CompanyAccess,
  personId: number,
  target: Standing,
  action: "remove" | "demote",
) {
  const holds = (who: SQL) => sql`exists (select 1 from ${memberships} m
      where m.company_id = ${access.companyId} and ${who} and ${membershipGrants(sql`m.id`, sql`m.company_id`, WRITE_SETTINGS)})`;
  return guardStatement(
    deps.db,
    "settingsWriter",
    sql`${holds(sql`m.person_id = ${personId}`)} and not ${holds(sql`m.person_id <> ${personId}`)}`,
    () => assertNotLastSettingsWriter(deps, access, personId, target, action),
  );
}

/** Whether membership `membershipId` holds exactly `chosen` (a PUT naming its current roles changes nothing). */
export async function holdsExactly({ db }: Deps, membershipId: number, chosen: { id: number }[]): Promise<boolean> {
  const held = await db
    .select({ roleId: membershipRoles.roleId })
    .from(membershipRoles)
    .where(eq(membershipRoles.membershipId, membershipId))
    .all();
  const ids = new Set(chosen.map((role) => role.id));
  return held.length === ids.size && held.every((row) => ids.has(row.roleId));
}

/**
 * Role names of the company, case-insensitively → role ids. A role the
 * company lacks is a 400 (docs/decisions.md); a role with a permission the caller
 * does not hold is a 403, so nobody hands out more than they have.
 */
export async function resolveRoles(
  { db }: Deps,
  access: CompanyAccess,
  names: string[],
): Promise<{ id: number; permissions: string[] }[]> {
  return pickRoles(access, await companyRoles(db, access.companyId), names);
}

export function pickRoles(
  access: CompanyAccess,
  available: { id: number; name: string; permissions: string[] }[],
  names: string[],
): { id: number; permissions: string[] }[] {
  const chosen = new Map<number, { id: number; permissions: string[] }>();
  for (const name of names) {
    const role = roleNamed(available, access.companyId, name);
    const missing = role.permissions.filter((permission) => !grants(access.permissions, permission as Permission));
    if (missing.length > 0) {
      throw forbidden(
        `you cannot give the role \`${role.name}\`: it grants ${missing.map((p) => `\`${p}\``).join(", ")}, which your roles do not`,
      );
    }
    chosen.set(role.id, { id: role.id, permissions: role.permissions });
  }
  return [...chosen.values()];
}
