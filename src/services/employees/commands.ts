import { and, count, eq, sql } from "drizzle-orm";
import type { BatchItem } from "drizzle-orm/batch";
import { guardStatement, type GuardStatement } from "../../db/guard";
import { touchRosters } from "../../db/rosters";
import { inList } from "../../db/sql";
import {
  licenses,
  membershipRoles,
  memberships,
  people,
  personAddresses,
  personAkas,
  personEmails,
  personPhones,
} from "../../db/schema";
import {
  MAX_EMPLOYEES_PER_COMPANY,
  type EmailInput,
  type EmployeeChanges,
  type NewEmployee,
} from "../../domain/employees";
import { ApiError, badRequest, notFound } from "../../lib/errors";
import { grants } from "../../lib/permissions";
import type { CompanyAccess } from "../companies";
import { companyRoles } from "../companies";
import { renderPersonDeliveries } from "../events";
import { findLicense, matchLicense } from "../licenses";
import { addRemoval, removedBy } from "../memberships";
import { WriteBatch } from "../outbox";
import type { Deps } from "../deps";
import { loadPeople, loadPerson, type PersonBody } from "../people";
import {
  assertSeatAvailable,
  assertSeatsAvailable,
  assignSeatStatement,
  freeSeatStatement,
  seatGuardStatement,
} from "../seats";
import {
  assertCovers,
  assertNotLastSettingsWriter,
  holdsExactly,
  pickRoles,
  resolveRoles,
  settingsWriterGuardStatement,
  standingGuardStatement,
  standingOf,
  WRITE_SETTINGS,
} from "./authorization";
import { askToSendInvitations } from "../invitations";
import { assertEmailsFree, emailReplacement, emailsTaken } from "./emails";
import { noLicense, tooManyEmployees } from "./errors";
import {
  belongsElsewhere,
  soleEmployerGuardStatement,
  touchesPersonWide,
  withoutPersonWideChanges,
  withoutUnchangedPersonWide,
} from "./person-wide";
import { addNewEmployees, collectionInserts, confirmationsGuardStatement, confirmedNumbersOf } from "./statements";

/**
 * The employee commands (docs/architecture.md, "Writes are commands"):
 * create (one or in bulk), update and remove, each checking first and then
 * writing the change, its `person:*` events and its trust-index work in one batch.
 */

/**
 * DELETE /employees/{id}: 404 when the person is not an employee, 403 when
 * the caller lacks one of their permissions, 409 when they are the last
 * member with `write settings` (removing yourself included).
 */
export async function removeEmployee(deps: Deps, access: CompanyAccess, personId: number): Promise<void> {
  const target = await standingOf(deps, access.companyId, personId);
  assertCovers(access, personId, target, "remove");
  if (grants(target.permissions, WRITE_SETTINGS))
    await assertNotLastSettingsWriter(deps, access, personId, target, "remove");
  const batch = new WriteBatch(deps);
  // What was read above may have changed since (another request made them an Admin, or removed the
  // other holder of `write settings`): the batch asks both again first, in its own transaction.
  batch.add(standingGuardStatement(deps, access, personId, "remove"));
  batch.add(settingsWriterGuardStatement(deps, access, personId, target, "remove"));
  const removed = addRemoval(batch, access.companyId, personId);
  const { results } = await batch.commit();
  // A concurrent removal got there first: it answered 204 and sent the event.
  if (!removedBy(results, removed)) throw notFound(`employee ${personId} does not exist`);
}

/** POST /employees: `createEmployees` with one employee. */
export async function createEmployee(deps: Deps, access: CompanyAccess, input: NewEmployee): Promise<PersonBody> {
  const [person] = await createEmployees(deps, access, [input], { bulk: false });
  return person!;
}

/**
 * POST /employees and POST /employees/bulk (docs/decisions.md,
 * "Employees and exposures"; docs/onboarding.md): checks
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
): Promise<PersonBody[]> {
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
  await assertSeatsAvailable(deps, companyId, seatsNeeded);

  const inserted = addNewEmployees(batch, companyId, checked);
  // Two requests may both have seen room for their employees: the guard rolls the later one back.
  batch.add(
    guardStatement(
      db,
      "employeeQuota",
      sql`(select count(*) from ${memberships} where ${memberships.companyId} = ${companyId}) > ${MAX_EMPLOYEES_PER_COMPANY}`,
      async () => {
        const [now] = await db.select({ n: count() }).from(memberships).where(eq(memberships.companyId, companyId));
        if ((now?.n ?? 0) + n > MAX_EMPLOYEES_PER_COMPANY) throw tooManyEmployees(companyId, now?.n ?? 0, n);
      },
    ),
  );
  explainEmailRace(
    batch,
    inputs.flatMap((input) => input.emails),
    null,
  );
  const { results, deliveries } = await batch.commit();
  if (inputs.some((input) => input.invite)) await askToSendInvitations(deps);
  // Inserted in input order, so ascending ids are input order.
  const ids = inserted
    .flatMap((position) => (results[position] as { id: number }[]).map((row) => row.id))
    .sort((a, b) => a - b);
  const persons = await loadPeople(deps, companyId, ids, access.company.scansInObject);
  await renderPersonDeliveries(deps, deliveries, persons);
  return persons;
}

/**
 * PUT /employees/{id} (docs/decisions.md, "Employees and exposures", PUT):
 * only the fields given change; akas,
 * phone_numbers and addresses are replaced as a whole (an empty array removes
 * them). `emails` replaces the emails this company manages for the person;
 * the person's own emails stay (the employer cannot remove them). The caller
 * must hold every permission of the member (403), and may not take `write
 * settings` from its last holder (409). When the person also belongs to
 * another company, their person-wide details (names, dob, akas, phones,
 * addresses) are theirs: changing them is a 409; sending them unchanged is fine.
 * A PUT whose every value is the current one writes nothing and sends no
 * `person:updated`: it answers the Person as it is.
 */
export async function updateEmployee(
  deps: Deps,
  access: CompanyAccess,
  personId: number,
  requested: EmployeeChanges,
): Promise<PersonBody> {
  const { db } = deps;
  const batch = new WriteBatch(deps);
  const { now } = batch;
  const { companyId } = access;
  const membership = await standingOf(deps, companyId, personId);
  assertCovers(access, personId, membership, "change");
  const shared = await belongsElsewhere(deps, companyId, personId);
  // Fields sent with their current values are left out: they change nothing (nor do they rewrite rows).
  const changes = shared
    ? await withoutPersonWideChanges(deps, personId, requested)
    : await withoutUnchangedPersonWide(deps, personId, requested);

  // What was read above may have changed since (they were made an Admin, or removed): asked again first.
  const statements: (BatchItem<"sqlite"> | GuardStatement)[] = [
    standingGuardStatement(deps, access, personId, "change"),
  ];
  // Read as theirs alone: the operator may add them to another company before the batch lands.
  if (!shared && touchesPersonWide(changes))
    statements.push(soleEmployerGuardStatement(deps, companyId, personId, changes));
  const names = {
    ...(changes.firstName !== undefined && { firstName: changes.firstName }),
    ...(changes.middleName !== undefined && { middleName: changes.middleName }),
    ...(changes.lastName !== undefined && { lastName: changes.lastName }),
    ...(changes.dob !== undefined && { dob: changes.dob }),
  };
  statements.push(
    db
      .update(people)
      .set({ ...names, updatedAt: now })
      .where(eq(people.id, personId)),
  );
  const renamed = Object.keys(names).length > 0;

  const granted = changes.roles ? await resolveRoles(deps, access, changes.roles) : null;
  if (granted && !(await holdsExactly(deps, membership.membershipId, granted))) {
    if (
      !grants(
        granted.flatMap((role) => role.permissions),
        WRITE_SETTINGS,
      )
    ) {
      if (grants(membership.permissions, WRITE_SETTINGS))
        await assertNotLastSettingsWriter(deps, access, personId, membership, "demote");
      // Also when they did not hold it as read above: another request may have made them its last holder.
      statements.splice(1, 0, settingsWriterGuardStatement(deps, access, personId, membership, "demote"));
    }
    statements.push(db.delete(membershipRoles).where(eq(membershipRoles.membershipId, membership.membershipId)));
    statements.push(
      ...granted.map((role) =>
        db.insert(membershipRoles).values({ membershipId: membership.membershipId, roleId: role.id }),
      ),
    );
  }
  if (changes.emails) await assertEmailsFree(deps, changes.emails, { companyId, personId });
  const emails = changes.emails ? await emailReplacement(db, companyId, personId, changes.emails, shared) : [];
  if (emails.length > 0) {
    // Both the emails they leave and the ones they take change hands (the owner records contacts link through).
    batch.markStaleEmailsOf(personId);
    statements.push(...emails);
  }
  if (changes.akas) {
    statements.push(db.delete(personAkas).where(eq(personAkas.personId, personId)));
    statements.push(...collectionInserts(db, personId, { akas: changes.akas }));
  }
  if (changes.phones) {
    // Both the numbers they leave and the ones they take change hands (caller records).
    batch.markStaleNumbersOf(personId);
    // The employer replaces the phones it may: a number the person proved is theirs and stays, confirmed,
    // named in the list or not (docs/decisions.md); any number the employer enters is unconfirmed. What was
    // read is what stays: a release or a proof since rolls the batch back (409).
    const confirmed = await confirmedNumbersOf(db, personId);
    statements.push(confirmationsGuardStatement(db, personId, confirmed));
    const mine = eq(personPhones.personId, personId);
    statements.push(db.delete(personPhones).where(and(mine, eq(personPhones.confirmed, false))));
    // Exactly one primary: the list's; with an empty list, the oldest number the person kept.
    const primary = changes.phones.find((phone) => phone.primary)?.e164 ?? null;
    if (confirmed.size > 0) {
      const oldestKept = sql`(select min(id) from ${personPhones} where person_id = ${personId} and confirmed = 1)`;
      statements.push(
        db
          .update(personPhones)
          .set({
            primary:
              primary === null ? sql`${personPhones.id} = ${oldestKept}` : sql`${personPhones.e164} = ${primary}`,
          })
          .where(and(mine, eq(personPhones.confirmed, true))),
      );
    }
    statements.push(
      ...collectionInserts(db, personId, {
        phones: changes.phones
          .filter((phone) => !confirmed.has(phone.e164))
          .map((phone) => ({ ...phone, confirmed: false })),
      }),
    );
  }
  if (changes.addresses) {
    statements.push(db.delete(personAddresses).where(eq(personAddresses.personId, personId)));
    statements.push(...collectionInserts(db, personId, { addresses: changes.addresses }));
  }

  if (changes.license === null) {
    if (membership.licenseId !== null) statements.push(freeSeatStatement(db, companyId, personId, now));
  } else if (changes.license !== undefined) {
    const licenseId = await resolveLicenseId(deps, changes.license);
    if (licenseId !== membership.licenseId) {
      await assertSeatAvailable(deps, companyId, licenseId);
      statements.push(assignSeatStatement(db, companyId, personId, licenseId, now));
      statements.push(seatGuardStatement(db, companyId, licenseId));
    }
  }
  // Nothing sent differs from what the person has now (their record's time and the guards aside): nothing
  // is written, and no `person:updated` is sent.
  if (!renamed && statements.filter((statement) => !("check" in statement)).length === 1) {
    const person = await loadPerson(deps, companyId, personId, access.company.scansInObject);
    if (!person) throw notFound(`employee ${personId} does not exist`);
    return person;
  }
  statements.push(db.update(memberships).set({ updatedAt: now }).where(eq(memberships.id, membership.membershipId)));
  // Their coworkers, in every company they belong to, see the change in their heartbeat.
  statements.push(touchRosters(db, { personIds: personId, at: now }));
  if (changes.emails && emails.length > 0) explainEmailRace(batch, changes.emails, { companyId, personId });

  for (const statement of statements) batch.add(statement);
  if (changes.phones) batch.markStaleNumbersOf(personId);
  if (emails.length > 0) batch.markStaleEmailsOf(personId);
  // Their own heartbeat (their record's time), their names and roles as their object holds them (GET /me, their
  // chats: docs/architecture.md, "Names travel with facts"), and their coworkers' heartbeat (the rosters), at once.
  batch.markStalePerson(personId);
  batch.markStaleCompaniesOf(personId);
  batch.emitPerson("person:updated", companyId, personId);
  const { deliveries } = await batch.commit();
  const person = (await loadPerson(deps, companyId, personId, access.company.scansInObject))!;
  await renderPersonDeliveries(deps, deliveries, [person]);
  return person;
}

async function resolveLicenseId(deps: Deps, ref: string): Promise<string> {
  const license = await findLicense(deps, ref);
  if (!license) throw noLicense(ref, true);
  return license.id;
}

/**
 * Emails are unique across all people, checked before the batch
 * (`assertEmailsFree`); another request's commit may take one in between, and
 * the batch's insert then fails its UNIQUE constraint. Explained after the
 * rollback by the same check asked again (db/guard.ts), never by the error's text.
 */
function explainEmailRace(
  batch: WriteBatch,
  emails: EmailInput[],
  self: { companyId: number; personId: number } | null,
) {
  if (emails.length === 0) return;
  batch.explainRollback(async () => {
    try {
      await assertEmailsFree(batch.deps, emails, self);
    } catch (err) {
      if (err instanceof ApiError)
        throw badRequest("one of the emails was just taken by another person; nothing was changed");
      throw err;
    }
  });
}
