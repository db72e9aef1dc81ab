import { and, asc, count, eq, gte, inArray, lt, ne, sql, type SQL } from "drizzle-orm";
import type { BatchItem } from "drizzle-orm/batch";
import type { Db } from "../db/client";
import { errorText } from "../db/errors";
import { failedGuard, guardStatement } from "../db/guard";
import { batchableAll, inList } from "../db/sql";
import {
  invitations,
  licenses,
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
import { ApiError, badRequest, conflict, forbidden, notFound } from "../lib/errors";
import { pageWindow, type Page } from "../lib/pagination";
import { grants, type Permission } from "../lib/permissions";
import type { CompanyAccess } from "../types";
import { companyRoles, roleNamed } from "./companies";
import { findLicense, matchLicense } from "./licenses";
import { renderPersonDeliveries } from "./events";
import { addRemoval, removedBy } from "./memberships";
import { WriteBatch, type Deps } from "./outbox";
import { touchRosters } from "../db/rosters";
import { loadPeople, loadPerson, visibleEmail, type Person } from "./people";
import {
  assertSeatAvailable,
  assertSeatsAvailable,
  assignSeatStatement,
  freeSeatStatement,
  noSeatAfterRace,
  seatGuardStatement,
  seatsByLicense,
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

/**
 * The employee ids of one page, optionally only those with an email starting
 * with `search` [seed 4.3 rule 1]. The prefix is a range on the lowercased,
 * uniquely indexed email (`email >= p AND email < p⁺`), so SQLite seeks the
 * index instead of scanning every address as `LIKE 'p%'` would.
 */
export async function listEmployeeIds(db: Db, companyId: number, search: string | null, page: Page) {
  const { limit, offset } = pageWindow(page);
  const upper = search ? prefixUpperBound(search) : null;
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
                upper === null ? undefined : lt(personEmails.email, upper),
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

/**
 * The smallest string greater than every string that starts with `prefix`
 * (SQLite compares UTF-8 bytes, i.e. code points), or null when there is
 * none: trailing U+10FFFF cannot be bumped, so they go and the code point
 * before them is bumped instead, skipping the surrogates.
 */
function prefixUpperBound(prefix: string): string | null {
  const codes = Array.from(prefix, (char) => char.codePointAt(0)!);
  while (codes.length > 0 && codes[codes.length - 1] === 0x10ffff) codes.pop();
  const last = codes.pop();
  if (last === undefined) return null;
  const next = last + 1 === 0xd800 ? 0xe000 : last + 1;
  return String.fromCodePoint(...codes, next);
}

/** A member's standing in the company: their membership and the permissions their roles grant. */
type Standing = { membershipId: number; licenseId: string | null; permissions: string[] };

const WRITE_SETTINGS: Permission = "write settings";

async function standingOf(db: Db, companyId: number, personId: number): Promise<Standing> {
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
function assertCovers(access: CompanyAccess, personId: number, target: Standing, action: "change" | "remove") {
  const missing = target.permissions.filter((permission) => !grants(access.permissions, permission as Permission));
  if (missing.length === 0) return;
  throw forbidden(
    `you cannot ${action} employee ${personId}: they hold ${missing.map((p) => `\`${p}\``).join(", ")}, which your roles do not grant`,
  );
}

/** `roles.permissions` (a JSON array) contains `permission`. */
const roleGrants = (permission: Permission) =>
  sql`exists (select 1 from json_each(${roles.permissions}) where value = ${permission})`;

/**
 * 409 when the member is the company's last holder of `write settings`
 * (only they can manage its settings, roles and billing), for DELETE and for a
 * PUT whose roles drop it: the company would be locked out.
 */
async function assertNotLastSettingsWriter(
  db: Db,
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

function lastSettingsWriter(access: CompanyAccess, personId: number, self: boolean, action: "remove" | "demote") {
  const who = self ? "you are" : `employee ${personId} is`;
  const what = action === "remove" ? (self ? "removing yourself" : "removing them") : "taking it away";
  return conflict(
    `${who} the last member of company ${access.companyId} with \`write settings\`; give another member a role with it (such as Admin) before ${what}`,
  );
}

/**
 * The batch that takes `write settings` from someone ends with this guard
 * (src/db/guard.ts): it rolls the batch back when no member of the company
 * holds it afterwards (two Admins demoting each other at once).
 */
function settingsWriterGuardStatement(db: Db, companyId: number) {
  return guardStatement(
    db,
    "settingsWriter",
    sql`not exists (
      select 1 from ${memberships}
      join ${membershipRoles} on ${membershipRoles.membershipId} = ${memberships.id}
      join ${roles} on ${roles.id} = ${membershipRoles.roleId} and ${roles.companyId} = ${memberships.companyId}
      where ${memberships.companyId} = ${companyId} and ${roleGrants(WRITE_SETTINGS)})`,
  );
}

/**
 * DELETE /employees/{id}: 404 when the person is not an employee, 403 when
 * the caller lacks one of their permissions, 409 when they are the last
 * member with `write settings` (removing yourself included).
 */
export async function removeEmployee(deps: Deps, access: CompanyAccess, personId: number): Promise<void> {
  const { db } = deps;
  const target = await standingOf(db, access.companyId, personId);
  assertCovers(access, personId, target, "remove");
  const holdsSettings = grants(target.permissions, WRITE_SETTINGS);
  if (holdsSettings) await assertNotLastSettingsWriter(db, access, personId, target, "remove");
  const batch = new WriteBatch(deps);
  const removed = addRemoval(batch, access.companyId, personId);
  // Two Admins removing each other at once: the later batch finds no holder left and rolls back.
  if (holdsSettings) batch.add(settingsWriterGuardStatement(db, access.companyId));
  let results: unknown[];
  try {
    ({ results } = await batch.commit());
  } catch (err) {
    if (failedGuard(err) === "settingsWriter") {
      throw lastSettingsWriter(access, personId, target.membershipId === access.membershipId, "remove");
    }
    throw err;
  }
  // A concurrent removal got there first: it answered 204 and sent the event.
  if (!removedBy(results, removed)) throw notFound(`employee ${personId} does not exist`);
}

/** Employees a company may have (docs/decisions.md). */
export const MAX_EMPLOYEES_PER_COMPANY = 100_000;
/** Employees in one `POST /employees/bulk` (docs/onboarding.md). */
export const MAX_BULK_EMPLOYEES = 1_000;
/**
 * Employees whose rows one INSERT carries: the rows travel as one JSON value
 * (one bound parameter) unpacked with `json_each`, so 1,000 employees take
 * about ten statements per table instead of several per employee, inside
 * D1's 100 parameters per statement and 1,000 statements per invocation
 * (https://developers.cloudflare.com/d1/platform/limits/).
 */
const EMPLOYEES_PER_INSERT = 100;

/** POST /employees: `createEmployees` with one employee. */
export async function createEmployee(deps: Deps, access: CompanyAccess, input: NewEmployee): Promise<Person> {
  const [person] = await createEmployees(deps, access, [input], { bulk: false });
  return person!;
}

/**
 * POST /employees and POST /employees/bulk [seed 4.3 rules 2–4]: checks
 * everything first (a 400 writes nothing: emails free anywhere, roles and
 * licenses known, seats for the whole batch, the company's quota), then
 * writes every person, collection, membership, role, seat and invitation and
 * one `person:created` each in ONE atomic batch. `bulk` names the element of
 * a failed check (`[3].emails`). Returns the Persons in input order.
 */
export async function createEmployees(
  deps: Deps,
  access: CompanyAccess,
  inputs: NewEmployee[],
  { bulk }: { bulk: boolean },
): Promise<Person[]> {
  const { db } = deps;
  const { companyId } = access;
  const batch = new WriteBatch(deps);
  const n = inputs.length;
  if (n === 0) return [];

  const [taken, available, catalog, [members]] = await db.batch([
    db
      .select({ email: personEmails.email })
      .from(personEmails)
      .where(
        inList(
          personEmails.email,
          inputs.flatMap((input) => input.emails.map((entry) => entry.email)),
        ),
      ),
    companyRoles(db, companyId),
    db.select().from(licenses),
    db.select({ n: count() }).from(memberships).where(eq(memberships.companyId, companyId)),
  ]);
  const locate = (index: number, field: string, err: ApiError) =>
    !bulk
      ? err
      : new ApiError(
          err.statusCode,
          err.statusCode === 400
            ? `invalid body: \`[${index}].${field}\` ${err.detail}`
            : `\`[${index}].${field}\`: ${err.detail}`,
        );
  const takenEmails = new Set(taken.map((row) => row.email));
  const seatsNeeded = new Map<string, number>();
  const checked = inputs.map((input, index) => {
    const clash = input.emails.map((entry) => entry.email).filter((email) => takenEmails.has(email));
    if (clash.length > 0) throw locate(index, "emails", emailsTaken(input.emails, clash));
    let roleIds: number[];
    try {
      roleIds = pickRoles(access, available, input.roles).map((role) => role.id);
    } catch (err) {
      throw err instanceof ApiError ? locate(index, "roles", err) : err;
    }
    let licenseId: string | null = null;
    if (input.license !== null) {
      const license = matchLicense(catalog, input.license);
      if (!license) throw locate(index, "license", noLicense(input.license, !bulk));
      licenseId = license.id;
      seatsNeeded.set(licenseId, (seatsNeeded.get(licenseId) ?? 0) + 1);
    }
    return { ...input, roleIds, licenseId };
  });
  const have = members?.n ?? 0;
  if (have + n > MAX_EMPLOYEES_PER_COMPANY) throw tooManyEmployees(companyId, have, n);
  await assertSeatsAvailable(db, companyId, seatsNeeded);

  const inserted = await addNewEmployees(batch, companyId, checked);
  // Two requests may both have seen room for their employees: the guard rolls the later one back.
  batch.add(
    guardStatement(
      db,
      "employeeQuota",
      sql`(select count(*) from ${memberships} where ${memberships.companyId} = ${companyId}) > ${MAX_EMPLOYEES_PER_COMPANY}`,
    ),
  );
  const { results, deliveries } = await runBatch(batch, companyId, [...seatsNeeded.keys()], { adding: n });
  // Inserted in input order, so ascending ids are input order.
  const ids = inserted
    .flatMap((position) => (results[position] as { id: number }[]).map((row) => row.id))
    .sort((a, b) => a - b);
  const persons = await loadPeople(db, companyId, ids);
  await renderPersonDeliveries(db, deliveries, persons);
  return persons;
}

type CheckedEmployee = NewEmployee & { roleIds: number[]; licenseId: string | null };

/**
 * Adds the statements that create `employees` to the batch, a fixed handful
 * per 100 employees whatever their collections: the people first (one
 * INSERT … SELECT per chunk, in input order), so inside the transaction
 * they take consecutive AUTOINCREMENT ids ending at max(id) and the k-th
 * employee is max(id) − n + 1 + k; every other row finds its person that way.
 * Returns the positions of the people inserts (their results are the ids).
 */
async function addNewEmployees(batch: WriteBatch, companyId: number, employees: CheckedEmployee[]): Promise<number[]> {
  const { db } = batch.deps;
  const { now } = batch;
  const t = now.getTime();
  const n = employees.length;
  const firstId = sql`((select max(${people.id}) from ${people}) - ${n - 1})`;
  const personOf = sql`${firstId} + json_extract(j.value, '$.k')`;

  const rows = await Promise.all(
    employees.map(async (employee, k) => {
      let invitation: { email: string; hash: string } | null = null;
      if (employee.invite) {
        // The token would be mailed to the person; sending mail is outside this service (docs/decisions.md).
        const token = base64url(crypto.getRandomValues(new Uint8Array(32)));
        invitation = { email: primaryOf(employee.emails).email, hash: await sha256Hex(token) };
      }
      return {
        k,
        first_name: employee.firstName,
        middle_name: employee.middleName,
        last_name: employee.lastName,
        dob: employee.dob,
        emails: employee.emails,
        akas: employee.akas,
        phones: employee.phones,
        addresses: employee.addresses,
        roles: employee.roleIds,
        license: employee.licenseId,
        ephemeral_until: employee.ephemeral ? t + EPHEMERAL_MS : null,
        invitation,
      };
    }),
  );
  const parts = chunks(rows, EMPLOYEES_PER_INSERT);

  const peopleInserts = parts.map((part) =>
    batch.add(
      batchableAll<{ id: number }>(
        db,
        sql`insert into ${people} (first_name, middle_name, last_name, dob, created_at, updated_at)
            select json_extract(value, '$.first_name'), json_extract(value, '$.middle_name'),
                   json_extract(value, '$.last_name'), json_extract(value, '$.dob'), ${t}, ${t}
            from json_each(${JSON.stringify(part)}) order by key
            returning id`,
      ),
    ),
  );
  /** One INSERT … SELECT per chunk over a collection of each employee (skipped where a chunk has none). */
  const children = (key: keyof (typeof rows)[number], insert: (json: string) => SQL) => {
    for (const part of parts) {
      if (part.every((row) => !Array.isArray(row[key]) || (row[key] as unknown[]).length === 0)) continue;
      batch.add(batchableAll(db, insert(JSON.stringify(part))));
    }
  };
  children(
    "emails",
    (json) => sql`insert into ${personEmails} (person_id, email, "primary", employer_company_id)
      select ${personOf}, json_extract(c.value, '$.email'), json_extract(c.value, '$.primary'), ${companyId}
      from json_each(${json}) j, json_each(j.value, '$.emails') c order by j.key, c.key`,
  );
  children(
    "akas",
    (json) => sql`insert into ${personAkas} (person_id, first_name, middle_name, last_name)
      select ${personOf}, json_extract(c.value, '$.firstName'), json_extract(c.value, '$.middleName'),
             json_extract(c.value, '$.lastName')
      from json_each(${json}) j, json_each(j.value, '$.akas') c order by j.key, c.key`,
  );
  children(
    "phones",
    (json) => sql`insert into ${personPhones} (person_id, country_code, phone_number, e164, "primary")
      select ${personOf}, json_extract(c.value, '$.countryCode'), json_extract(c.value, '$.nationalNumber'),
             json_extract(c.value, '$.e164'), json_extract(c.value, '$.primary')
      from json_each(${json}) j, json_each(j.value, '$.phones') c order by j.key, c.key`,
  );
  children(
    "addresses",
    (
      json,
    ) => sql`insert into ${personAddresses} (person_id, "primary", line_1, line_2, city, region, postal_code, country)
      select ${personOf}, json_extract(c.value, '$.primary'), json_extract(c.value, '$.line1'),
             json_extract(c.value, '$.line2'), json_extract(c.value, '$.city'), json_extract(c.value, '$.region'),
             json_extract(c.value, '$.postalCode'), json_extract(c.value, '$.country')
      from json_each(${json}) j, json_each(j.value, '$.addresses') c order by j.key, c.key`,
  );
  for (const part of parts) {
    batch.add(
      batchableAll(
        db,
        sql`insert into ${memberships} (company_id, person_id, license_id, license_start_at, ephemeral_until, created_at, updated_at)
          select ${companyId}, ${personOf}, json_extract(j.value, '$.license'),
                 case when json_extract(j.value, '$.license') is null then null else ${t} end,
                 json_extract(j.value, '$.ephemeral_until'), ${t}, ${t}
          from json_each(${JSON.stringify(part)}) j order by j.key`,
      ),
    );
  }
  // New coworkers joined: the company's members see it in their heartbeat.
  batch.add(
    touchRosters(db, {
      personIds: sql`select ${people.id} from ${people} where ${people.id} >= ${firstId}`,
      companyId,
      at: batch.now,
    }),
  );
  children(
    "roles",
    (json) => sql`insert into ${membershipRoles} (membership_id, role_id)
      select m.id, c.value from json_each(${json}) j, json_each(j.value, '$.roles') c
      join ${memberships} m on m.company_id = ${companyId} and m.person_id = ${personOf}
      order by j.key, c.key`,
  );
  for (const part of parts) {
    if (part.every((row) => row.invitation === null)) continue;
    batch.add(
      batchableAll(
        db,
        sql`insert into ${invitations} (company_id, person_id, email, token_hash, expires_at, created_at)
          select ${companyId}, ${personOf}, json_extract(j.value, '$.invitation.email'),
                 json_extract(j.value, '$.invitation.hash'), ${t + INVITATION_MS}, ${t}
          from json_each(${JSON.stringify(part)}) j
          where json_extract(j.value, '$.invitation') is not null order by j.key`,
      ),
    );
  }
  // Two requests may both have seen the last seats free: the guard rolls the batch back.
  for (const licenseId of new Set(employees.flatMap((employee) => employee.licenseId ?? []))) {
    batch.add(seatGuardStatement(db, companyId, licenseId));
  }
  // Their phones now reach a platform person (caller records), and the company's webhooks hear of them.
  batch.reindexNumbers([...new Set(employees.flatMap((employee) => employee.phones.map((phone) => phone.e164)))]);
  batch.emitPeople(
    "person:created",
    companyId,
    sql`select ${people.id} as id from ${people} where ${people.id} >= ${firstId}`,
  );
  return peopleInserts;
}

/**
 * PUT /employees/{id} [seed 4.3 rule 5]: only the fields given change; akas,
 * phone_numbers and addresses are replaced as a whole (an empty array removes
 * them). `emails` replaces the emails this company manages for the person;
 * the person's own emails stay (the employer cannot remove them). The caller
 * must hold every permission of the member (403), and may not take `write
 * settings` from its last holder (409). When the person also belongs to
 * another company, their person-wide details (names, dob, akas, phones,
 * addresses) are theirs: changing them is a 409; sending them unchanged is fine.
 */
export async function updateEmployee(
  deps: Deps,
  access: CompanyAccess,
  personId: number,
  requested: EmployeeChanges,
): Promise<Person> {
  const { db } = deps;
  const batch = new WriteBatch(deps);
  const { now } = batch;
  const { companyId } = access;
  const membership = await standingOf(db, companyId, personId);
  assertCovers(access, personId, membership, "change");
  const shared = await belongsElsewhere(db, companyId, personId);
  const changes = shared ? await withoutPersonWideChanges(db, personId, requested) : requested;

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

  let guardSettings = false;
  if (changes.roles) {
    const granted = await resolveRoles(db, access, changes.roles);
    if (
      grants(membership.permissions, WRITE_SETTINGS) &&
      !grants(
        granted.flatMap((role) => role.permissions),
        WRITE_SETTINGS,
      )
    ) {
      await assertNotLastSettingsWriter(db, access, personId, membership, "demote");
      guardSettings = true;
    }
    statements.push(db.delete(membershipRoles).where(eq(membershipRoles.membershipId, membership.membershipId)));
    statements.push(
      ...granted.map((role) =>
        db.insert(membershipRoles).values({ membershipId: membership.membershipId, roleId: role.id }),
      ),
    );
  }
  if (changes.emails) {
    await assertEmailsFree(db, changes.emails, { companyId, personId });
    statements.push(...(await emailReplacement(db, companyId, personId, changes.emails, shared)));
  }
  if (changes.akas) {
    statements.push(db.delete(personAkas).where(eq(personAkas.personId, personId)));
    statements.push(...collectionInserts(db, personId, { akas: changes.akas }));
  }
  if (changes.phones) {
    // Both the numbers they leave and the ones they take change hands (caller records).
    batch.reindexNumbersOf(personId);
    statements.push(db.delete(personPhones).where(eq(personPhones.personId, personId)));
    statements.push(...collectionInserts(db, personId, { phones: changes.phones }));
  }
  if (changes.addresses) {
    statements.push(db.delete(personAddresses).where(eq(personAddresses.personId, personId)));
    statements.push(...collectionInserts(db, personId, { addresses: changes.addresses }));
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
  statements.push(db.update(memberships).set({ updatedAt: now }).where(eq(memberships.id, membership.membershipId)));
  // Their coworkers, in every company they belong to, see the change in their heartbeat.
  statements.push(touchRosters(db, { personIds: personId, at: now }));
  if (guardSettings) statements.push(settingsWriterGuardStatement(db, companyId));

  for (const statement of statements) batch.add(statement);
  if (changes.phones) batch.reindexNumbersOf(personId);
  batch.emitPerson("person:updated", companyId, personId);
  const { deliveries } = await runBatch(batch, companyId, guardedLicense ? [guardedLicense] : [], {
    settings: { access, personId, target: membership },
  });
  const person = (await loadPerson(db, companyId, personId))!;
  await renderPersonDeliveries(db, deliveries, [person]);
  return person;
}

/** Whether the person is also a member of a company other than `companyId`. */
async function belongsElsewhere(db: Db, companyId: number, personId: number): Promise<boolean> {
  const row = await db
    .select({ id: memberships.id })
    .from(memberships)
    .where(and(eq(memberships.personId, personId), ne(memberships.companyId, companyId)))
    .limit(1)
    .get();
  return row !== undefined;
}

/** The PUT fields that belong to the person rather than to one company, with their names on the wire. */
const PERSON_WIDE = {
  firstName: "first_name",
  middleName: "middle_name",
  lastName: "last_name",
  dob: "dob",
  akas: "akas",
  phones: "phone_numbers",
  addresses: "addresses",
} as const;

/**
 * For a person another company also relies on: 409 when `changes` would
 * change a person-wide field; else the changes without those fields, so that
 * values sent unchanged are not rewritten (their rows keep their ids).
 */
async function withoutPersonWideChanges(db: Db, personId: number, changes: EmployeeChanges) {
  const fields = (Object.keys(PERSON_WIDE) as (keyof typeof PERSON_WIDE)[]).filter((key) => changes[key] !== undefined);
  if (fields.length === 0) return changes;
  const [[base], akas, phones, addresses] = await db.batch([
    db
      .select({
        firstName: people.firstName,
        middleName: people.middleName,
        lastName: people.lastName,
        dob: people.dob,
      })
      .from(people)
      .where(eq(people.id, personId)),
    db
      .select({ firstName: personAkas.firstName, middleName: personAkas.middleName, lastName: personAkas.lastName })
      .from(personAkas)
      .where(eq(personAkas.personId, personId))
      .orderBy(asc(personAkas.id)),
    db
      .select({
        primary: personPhones.primary,
        countryCode: personPhones.countryCode,
        nationalNumber: personPhones.phoneNumber,
        e164: personPhones.e164,
      })
      .from(personPhones)
      .where(eq(personPhones.personId, personId))
      .orderBy(asc(personPhones.id)),
    db
      .select({
        primary: personAddresses.primary,
        line1: personAddresses.line1,
        line2: personAddresses.line2,
        city: personAddresses.city,
        region: personAddresses.region,
        postalCode: personAddresses.postalCode,
        country: personAddresses.country,
      })
      .from(personAddresses)
      .where(eq(personAddresses.personId, personId))
      .orderBy(asc(personAddresses.id)),
  ]);
  const current: Record<keyof typeof PERSON_WIDE, unknown> = { ...base!, akas, phones, addresses };
  const changed = fields.filter((key) => canonical(changes[key]) !== canonical(current[key]));
  if (changed.length > 0) {
    throw conflict(
      `this person also belongs to another company; their personal details can only be changed by them (${changed
        .map((key) => `\`${PERSON_WIDE[key]}\``)
        .join(", ")} would change); leave those fields out or send their current values`,
    );
  }
  const rest = { ...changes };
  for (const key of fields) delete rest[key];
  return rest;
}

/** JSON with object keys sorted, to compare values regardless of key order. */
function canonical(value: unknown): string {
  return JSON.stringify(value, (_, v: unknown) =>
    v && typeof v === "object" && !Array.isArray(v)
      ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => (a < b ? -1 : 1)))
      : v,
  );
}

type SettingsGuard = { access: CompanyAccess; personId: number; target: Standing };

/**
 * Runs a write batch, turning the guard and constraint failures a concurrent
 * request can cause into the answers the checks before it would have given.
 */
async function runBatch(
  batch: WriteBatch,
  companyId: number,
  licenseIds: string[],
  { settings, adding = 0 }: { settings?: SettingsGuard; adding?: number } = {},
) {
  try {
    return await batch.commit();
  } catch (err) {
    if (adding > 0 && failedGuard(err) === "employeeQuota") {
      const [members] = await batch.deps.db
        .select({ n: count() })
        .from(memberships)
        .where(eq(memberships.companyId, companyId));
      throw tooManyEmployees(companyId, members?.n ?? 0, adding);
    }
    if (licenseIds.length > 0 && failedGuard(err) === "seats") {
      await noSeatAfterRace(batch.deps.db, companyId, await shortLicense(batch.deps.db, companyId, licenseIds));
    }
    if (settings && failedGuard(err) === "settingsWriter") {
      const { access, personId, target } = settings;
      throw lastSettingsWriter(access, personId, target.membershipId === access.membershipId, "demote");
    }
    if (errorText(err).includes("UNIQUE constraint failed: person_emails.email")) {
      throw badRequest("one of the emails was just taken by another person; nothing was changed");
    }
    throw err;
  }
}

const tooManyEmployees = (companyId: number, have: number, adding: number) =>
  badRequest(
    `a company may have at most ${MAX_EMPLOYEES_PER_COMPANY.toLocaleString("en-US")} employees; company ${companyId} has ${have} and this would add ${adding}`,
  );

/** Of the licenses a rolled-back batch assigned, the first one now short of seats (the guard's reason). */
async function shortLicense(db: Db, companyId: number, licenseIds: string[]): Promise<string> {
  const seats = await seatsByLicense(db, companyId);
  return licenseIds.find((id) => (seats.get(id)?.num_available ?? 0) <= 0) ?? licenseIds[0]!;
}

/**
 * Emails are unique across all people (docs/decisions.md). On PUT the person
 * (`self`) may keep the emails this company sees of them; another employer's
 * address of the same person is taken like anyone else's.
 */
async function assertEmailsFree(db: Db, emails: EmailInput[], self: { companyId: number; personId: number } | null) {
  const addresses = emails.map((entry) => entry.email);
  const taken = await db
    .select({ email: personEmails.email })
    .from(personEmails)
    .where(
      and(
        inArray(personEmails.email, addresses),
        self === null
          ? undefined
          : sql`not (${personEmails.personId} = ${self.personId} and ${visibleEmail(self.companyId)})`,
      ),
    )
    .all();
  if (taken.length > 0)
    throw emailsTaken(
      emails,
      taken.map((row) => row.email),
    );
}

/** The 400 for emails that belong to a person already; it does not say whose or where. */
function emailsTaken(emails: EmailInput[], taken: string[]) {
  const primary = primaryOf(emails).email;
  const names = [...taken].sort((a, b) => Number(b === primary) - Number(a === primary));
  return badRequest(
    `${names[0] === primary ? "the primary email" : "the email"} ${names.map((email) => `\`${email}\``).join(", ")} already ${
      names.length > 1 ? "belong" : "belongs"
    } to a person`,
  );
}

/**
 * Replaces the emails this company manages and sets the primary flag on the
 * emails it sees (another employer's addresses are never touched). When the
 * person also belongs to another company, the flags of their own emails are
 * theirs too: only this company's emails are rewritten, and naming an own
 * email that is not already primary is a 409. A company's view then shows
 * its own primary first (see `loadPeople`).
 */
async function emailReplacement(db: Db, companyId: number, personId: number, emails: EmailInput[], shared: boolean) {
  const visible = await db
    .select({
      id: personEmails.id,
      email: personEmails.email,
      primary: personEmails.primary,
      employer: personEmails.employerCompanyId,
    })
    .from(personEmails)
    .where(and(eq(personEmails.personId, personId), visibleEmail(companyId)))
    .all();
  const primary = primaryOf(emails).email;
  if (shared && visible.some((row) => row.employer === null && row.email === primary && !row.primary)) {
    throw conflict(
      `\`${primary}\` is the person's own email and this person also belongs to another company; only they can make it their primary email, so name one of this company's emails as primary`,
    );
  }
  const wanted = new Set(emails.map((entry) => entry.email));
  const have = new Set(visible.map((row) => row.email));
  const dropped = visible.filter((row) => row.employer === companyId && !wanted.has(row.email)).map((row) => row.id);
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
  statements.push(
    db
      .update(personEmails)
      .set({ primary: sql`${personEmails.email} = ${primary}` })
      .where(
        and(
          eq(personEmails.personId, personId),
          shared ? eq(personEmails.employerCompanyId, companyId) : visibleEmail(companyId),
        ),
      ),
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

function chunks<T>(rows: T[], size = ROWS_PER_INSERT): T[][] {
  const parts: T[][] = [];
  for (let i = 0; i < rows.length; i += size) parts.push(rows.slice(i, i + size));
  return parts;
}

const primaryOf = <T extends { primary: boolean }>(entries: T[]): T =>
  entries.find((entry) => entry.primary) ?? entries[0]!;

/**
 * Role names of the company, case-insensitively → role ids. A role the
 * company lacks is a 400 (docs/decisions.md); a role with a permission the caller
 * does not hold is a 403, so nobody hands out more than they have.
 */
async function resolveRoles(
  db: Db,
  access: CompanyAccess,
  names: string[],
): Promise<{ id: number; permissions: string[] }[]> {
  return pickRoles(access, await companyRoles(db, access.companyId), names);
}

function pickRoles(
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

async function resolveLicenseId(db: Db, ref: string): Promise<string> {
  const license = await findLicense(db, ref);
  if (!license) throw noLicense(ref, true);
  return license.id;
}

/** `named`: the message names the field (POST and PUT); the bulk route names `[i].license` itself. */
const noLicense = (ref: string, named: boolean) =>
  badRequest(`${named ? "`license`: " : ""}there is no license ${JSON.stringify(ref)}; see GET /licenses`);

function base64url(bytes: Uint8Array): string {
  return btoa(String.fromCharCode(...bytes))
    .replace(/\+/g, "-")
    .replace(/\//g, "_")
    .replace(/=+$/, "");
}
