import { and, asc, count, eq, gte, inArray, lt, ne, sql, type SQL } from "drizzle-orm";
import type { BatchItem } from "drizzle-orm/batch";
import type { Db } from "../db/client";
import {
  invitations,
  membershipRoles,
  memberships,
  people,
  personAddresses,
  personAkas,
  personEmails,
  personPhones,
  roles,
} from "../db/schema";
import { sha256Hex } from "../lib/crypto";
import { badRequest, forbidden, notFound } from "../lib/errors";
import { pageWindow, type Page } from "../lib/pagination";
import { grants, type Permission } from "../lib/permissions";
import type { CompanyAccess } from "../types";
import { findLicense } from "./licenses";
import { visibleEmail } from "./people";
import {
  assertSeatAvailable,
  assignSeatStatement,
  errorText,
  freeSeatStatement,
  isSeatGuardFailure,
  noSeatAfterRace,
  seatGuardStatement,
} from "./seats";

/** Standardized input (the zod schemas of the employees routes produce these). */
export type EmailInput = { primary: boolean; email: string };
export type PhoneInput = { primary: boolean; countryCode: string; nationalNumber: string; e164: string };
export type AddressInput = {
  primary: boolean;
  line1: string;
  line2: string | null;
  city: string;
  region: string;
  postalCode: string;
  country: string;
};
export type AkaInput = { firstName: string; middleName: string | null; lastName: string | null };

export type NewEmployee = {
  firstName: string;
  middleName: string | null;
  lastName: string;
  dob: string;
  emails: EmailInput[];
  akas: AkaInput[];
  phones: PhoneInput[];
  addresses: AddressInput[];
  roles: string[];
  /** License id or name; null for none. */
  license: string | null;
  invite: boolean;
  ephemeral: boolean;
};

/** PUT: only the fields present change [seed 4.3 rule 5]. */
export type EmployeeChanges = Partial<Omit<NewEmployee, "invite" | "ephemeral">>;

const EPHEMERAL_MS = 24 * 3600 * 1000;
const INVITATION_MS = 7 * 24 * 3600 * 1000;
/** Rows per multi-row insert: the widest collection row binds 8 values, under D1's 100. */
const ROWS_PER_INSERT = 10;

/** The id of the person inserted first in the same batch (ids only grow: AUTOINCREMENT). */
const insertedPersonId = sql`(select max(${people.id}) from ${people})`;

/**
 * The employee ids of one page, optionally only those with an email starting
 * with `search` [seed 4.3 rule 1]. The prefix is a range on the lowercased,
 * uniquely indexed email (`email >= p AND email < p⁺`), so SQLite seeks the
 * index instead of scanning every address as `LIKE 'p%'` would.
 */
export async function listEmployeeIds(db: Db, companyId: number, search: string | null, page: Page) {
  const { limit, offset } = pageWindow(page);
  // With a search, the email range drives: SQLite reads the matching addresses
  // from the unique index, then probes (company_id, person_id) for each.
  const where = and(
    eq(memberships.companyId, companyId),
    search
      ? inArray(
          memberships.personId,
          db
            .select({ personId: personEmails.personId })
            .from(personEmails)
            .where(
              and(
                gte(personEmails.email, search),
                lt(personEmails.email, prefixUpperBound(search)),
                visibleEmail(companyId),
              ),
            ),
        )
      : undefined,
  );
  const [rows, [total]] = await db.batch([
    db
      .select({ id: memberships.personId })
      .from(memberships)
      .where(where)
      .orderBy(asc(memberships.personId))
      .limit(limit)
      .offset(offset),
    db.select({ n: count() }).from(memberships).where(where),
  ]);
  return { ids: rows.map((row) => row.id), total: total?.n ?? 0 };
}

/** The smallest string greater than every string that starts with `prefix`. */
function prefixUpperBound(prefix: string): string {
  const chars = Array.from(prefix);
  const last = chars.pop()!;
  return chars.join("") + String.fromCodePoint(last.codePointAt(0)! + 1);
}

export async function isEmployee(db: Db, companyId: number, personId: number): Promise<boolean> {
  const row = await db
    .select({ id: memberships.id })
    .from(memberships)
    .where(and(eq(memberships.companyId, companyId), eq(memberships.personId, personId)))
    .get();
  return row !== undefined;
}

/**
 * POST /employees [seed 4.3 rules 2–4]: checks everything first (a 400 writes
 * nothing), then writes the person, collections, membership, roles, seat and
 * invitation in one atomic batch. Returns the new person's id.
 */
export async function createEmployee(db: Db, access: CompanyAccess, input: NewEmployee, now: Date): Promise<number> {
  const { companyId } = access;
  await assertEmailsFree(db, input.emails, null);
  const roleIds = await resolveRoles(db, access, input.roles);
  const licenseId = input.license === null ? null : await resolveLicenseId(db, input.license);
  if (licenseId) await assertSeatAvailable(db, companyId, licenseId);

  const membershipId = sql`(select ${memberships.id} from ${memberships} where ${memberships.companyId} = ${companyId} and ${memberships.personId} = ${insertedPersonId})`;
  const statements: BatchItem<"sqlite">[] = [
    db
      .insert(people)
      .values({
        firstName: input.firstName,
        middleName: input.middleName,
        lastName: input.lastName,
        dob: input.dob,
        createdAt: now,
        updatedAt: now,
      })
      .returning({ id: people.id }),
    ...emailInserts(db, insertedPersonId, companyId, input.emails),
    ...collectionInserts(db, insertedPersonId, input),
    db.insert(memberships).values({
      companyId,
      personId: insertedPersonId,
      licenseId,
      licenseStartAt: licenseId ? now : null,
      ephemeralUntil: input.ephemeral ? new Date(now.getTime() + EPHEMERAL_MS) : null,
      createdAt: now,
      updatedAt: now,
    }),
    ...roleIds.map((roleId) => db.insert(membershipRoles).values({ membershipId, roleId })),
  ];
  if (licenseId) statements.push(seatGuardStatement(db, companyId, licenseId));
  if (input.invite) {
    // The token would be mailed to the person; sending mail is outside this service (docs/decisions.md).
    const token = base64url(crypto.getRandomValues(new Uint8Array(32)));
    statements.push(
      db.insert(invitations).values({
        companyId,
        personId: insertedPersonId,
        email: primaryOf(input.emails).email,
        tokenHash: await sha256Hex(token),
        expiresAt: new Date(now.getTime() + INVITATION_MS),
        createdAt: now,
      }),
    );
  }

  const results = await runBatch(db, statements, companyId, licenseId);
  const [inserted] = results[0] as { id: number }[];
  return inserted!.id;
}

/**
 * PUT /employees/{id} [seed 4.3 rule 5]: only the fields given change; akas,
 * phone_numbers and addresses are replaced as a whole (an empty array removes
 * them). `emails` replaces the emails this company manages for the person;
 * the person's own emails stay (the employer cannot remove them).
 */
export async function updateEmployee(
  db: Db,
  access: CompanyAccess,
  personId: number,
  changes: EmployeeChanges,
  now: Date,
): Promise<void> {
  const { companyId } = access;
  const membership = await db
    .select({ id: memberships.id, licenseId: memberships.licenseId })
    .from(memberships)
    .where(and(eq(memberships.companyId, companyId), eq(memberships.personId, personId)))
    .get();
  if (!membership) throw notFound(`employee ${personId} does not exist`);

  const statements: BatchItem<"sqlite">[] = [
    db
      .update(people)
      .set({
        ...(changes.firstName !== undefined && { firstName: changes.firstName }),
        ...(changes.middleName !== undefined && { middleName: changes.middleName }),
        ...(changes.lastName !== undefined && { lastName: changes.lastName }),
        ...(changes.dob !== undefined && { dob: changes.dob }),
        updatedAt: now,
      })
      .where(eq(people.id, personId)),
  ];

  if (changes.emails) {
    await assertEmailsFree(db, changes.emails, personId);
    statements.push(...(await emailReplacement(db, companyId, personId, changes.emails)));
  }
  if (changes.akas) {
    statements.push(db.delete(personAkas).where(eq(personAkas.personId, personId)));
    statements.push(...collectionInserts(db, personId, { akas: changes.akas }));
  }
  if (changes.phones) {
    statements.push(db.delete(personPhones).where(eq(personPhones.personId, personId)));
    statements.push(...collectionInserts(db, personId, { phones: changes.phones }));
  }
  if (changes.addresses) {
    statements.push(db.delete(personAddresses).where(eq(personAddresses.personId, personId)));
    statements.push(...collectionInserts(db, personId, { addresses: changes.addresses }));
  }
  if (changes.roles) {
    const roleIds = await resolveRoles(db, access, changes.roles);
    statements.push(db.delete(membershipRoles).where(eq(membershipRoles.membershipId, membership.id)));
    statements.push(
      ...roleIds.map((roleId) => db.insert(membershipRoles).values({ membershipId: membership.id, roleId })),
    );
  }

  let guardedLicense: string | null = null;
  if (changes.license === null) {
    if (membership.licenseId !== null) statements.push(freeSeatStatement(db, companyId, personId, now));
  } else if (changes.license !== undefined) {
    const licenseId = await resolveLicenseId(db, changes.license);
    if (licenseId !== membership.licenseId) {
      await assertSeatAvailable(db, companyId, licenseId);
      statements.push(assignSeatStatement(db, companyId, personId, licenseId, now));
      statements.push(seatGuardStatement(db, companyId, licenseId));
      guardedLicense = licenseId;
    }
  }
  statements.push(db.update(memberships).set({ updatedAt: now }).where(eq(memberships.id, membership.id)));

  await runBatch(db, statements, companyId, guardedLicense);
}

/**
 * DELETE /employees/{id} [seed 4.3 rule 6] in one batch; see `removalStatements`.
 * Returns false when the person is not an employee of the company.
 */
/** Runs a write batch, turning the constraint failures a concurrent request can cause into 400s. */
async function runBatch(db: Db, statements: BatchItem<"sqlite">[], companyId: number, licenseId: string | null) {
  const [first, ...rest] = statements;
  try {
    return await db.batch([first!, ...rest]);
  } catch (err) {
    if (licenseId && isSeatGuardFailure(err)) await noSeatAfterRace(db, companyId, licenseId);
    if (errorText(err).includes("UNIQUE constraint failed: person_emails.email")) {
      throw badRequest("one of the emails was just taken by another person; nothing was changed");
    }
    throw err;
  }
}

/** Emails are unique across all people (DECISIONS §5); `self` may keep the ones it has. */
async function assertEmailsFree(db: Db, emails: EmailInput[], self: number | null) {
  const addresses = emails.map((entry) => entry.email);
  const taken = await db
    .select({ email: personEmails.email })
    .from(personEmails)
    .where(and(inArray(personEmails.email, addresses), self === null ? undefined : ne(personEmails.personId, self)))
    .all();
  if (taken.length === 0) return;
  const primary = primaryOf(emails).email;
  const names = taken.map((row) => row.email).sort((a, b) => Number(b === primary) - Number(a === primary));
  throw badRequest(
    `${names[0] === primary ? "the primary email" : "the email"} ${names.map((email) => `\`${email}\``).join(", ")} already ${
      names.length > 1 ? "belong" : "belongs"
    } to a person`,
  );
}

async function emailReplacement(db: Db, companyId: number, personId: number, emails: EmailInput[]) {
  const existing = await db
    .select({ id: personEmails.id, email: personEmails.email, employer: personEmails.employerCompanyId })
    .from(personEmails)
    .where(eq(personEmails.personId, personId))
    .all();
  const wanted = new Set(emails.map((entry) => entry.email));
  const have = new Set(existing.map((row) => row.email));
  const dropped = existing.filter((row) => row.employer === companyId && !wanted.has(row.email)).map((row) => row.id);
  const statements: BatchItem<"sqlite">[] = [];
  if (dropped.length > 0) statements.push(db.delete(personEmails).where(inArray(personEmails.id, dropped)));
  statements.push(
    ...emailInserts(
      db,
      personId,
      companyId,
      emails.filter((entry) => !have.has(entry.email)),
    ),
  );
  // The primary named here becomes the person's one primary address.
  statements.push(
    db
      .update(personEmails)
      .set({ primary: sql`${personEmails.email} = ${primaryOf(emails).email}` })
      .where(eq(personEmails.personId, personId)),
  );
  return statements;
}

function emailInserts(db: Db, personId: number | SQL, companyId: number, emails: EmailInput[]) {
  return chunks(emails).map((part) =>
    db
      .insert(personEmails)
      .values(
        part.map((entry) => ({ personId, email: entry.email, primary: entry.primary, employerCompanyId: companyId })),
      ),
  );
}

function collectionInserts(
  db: Db,
  personId: number | SQL,
  input: { akas?: AkaInput[]; phones?: PhoneInput[]; addresses?: AddressInput[] },
) {
  return [
    ...chunks(input.akas ?? []).map((part) => db.insert(personAkas).values(part.map((aka) => ({ personId, ...aka })))),
    ...chunks(input.phones ?? []).map((part) =>
      db.insert(personPhones).values(
        part.map((phone) => ({
          personId,
          countryCode: phone.countryCode,
          phoneNumber: phone.nationalNumber,
          e164: phone.e164,
          primary: phone.primary,
        })),
      ),
    ),
    ...chunks(input.addresses ?? []).map((part) =>
      db.insert(personAddresses).values(part.map((address) => ({ personId, ...address }))),
    ),
  ];
}

function chunks<T>(rows: T[]): T[][] {
  const parts: T[][] = [];
  for (let i = 0; i < rows.length; i += ROWS_PER_INSERT) parts.push(rows.slice(i, i + ROWS_PER_INSERT));
  return parts;
}

const primaryOf = <T extends { primary: boolean }>(entries: T[]): T =>
  entries.find((entry) => entry.primary) ?? entries[0]!;

/**
 * Role names of the company, case-insensitively → role ids. A role the
 * company lacks is a 400 (DECISIONS §2); a role with a permission the caller
 * does not hold is a 403, so nobody hands out more than they have.
 */
async function resolveRoles(db: Db, access: CompanyAccess, names: string[]): Promise<number[]> {
  const available = await db
    .select({ id: roles.id, name: roles.name, permissions: roles.permissions })
    .from(roles)
    .where(eq(roles.companyId, access.companyId))
    .orderBy(asc(roles.id))
    .all();
  const ids = new Set<number>();
  for (const name of names) {
    const role = available.find((entry) => entry.name.toLowerCase() === name.toLowerCase());
    if (!role) {
      throw badRequest(
        `company ${access.companyId} has no role ${JSON.stringify(name)}; its roles are ${available.map((r) => `\`${r.name}\``).join(", ")}`,
      );
    }
    const missing = role.permissions.filter((permission) => !grants(access.permissions, permission as Permission));
    if (missing.length > 0) {
      throw forbidden(
        `you cannot give the role \`${role.name}\`: it grants ${missing.map((p) => `\`${p}\``).join(", ")}, which your roles do not`,
      );
    }
    ids.add(role.id);
  }
  return [...ids];
}

async function resolveLicenseId(db: Db, ref: string): Promise<string> {
  const license = await findLicense(db, ref);
  if (!license) throw badRequest(`\`license\`: there is no license ${JSON.stringify(ref)}; see GET /licenses`);
  return license.id;
}

function base64url(bytes: Uint8Array): string {
  return btoa(String.fromCharCode(...bytes))
    .replace(/\+/g, "-")
    .replace(/\//g, "_")
    .replace(/=+$/, "");
}
