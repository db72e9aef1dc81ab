import { and, asc, eq, ne, sql } from "drizzle-orm";
import { guardStatement } from "../../db/guard";
import { memberships, people, personAddresses, personAkas, personPhones } from "../../db/schema";
import type { EmployeeChanges } from "../../domain/employees";
import { conflict } from "../../lib/errors";
import type { Deps } from "../deps";

/**
 * A person who also belongs to another company: their person-wide details
 * (names, dob, akas, phones, addresses) are theirs, and no employer changes them.
 */

/** Whether the person is also a member of a company other than `companyId`. */
export async function belongsElsewhere({ db }: Deps, companyId: number, personId: number): Promise<boolean> {
  const row = await db
    .select({ id: memberships.id })
    .from(memberships)
    .where(and(eq(memberships.personId, personId), ne(memberships.companyId, companyId)))
    .limit(1)
    .get();
  return row !== undefined;
}

/**
 * The guard of a PUT that read the person as belonging to `companyId` alone and changes their
 * person-wide details or emails (which a shared person's PUT treats differently): the batch rolls
 * back when the operator added them to another company meanwhile, answered by the 409 a PUT made
 * after that would have got (or, when the values sent were their current ones, a 409 to send it again).
 */
export function soleEmployerGuardStatement(deps: Deps, companyId: number, personId: number, changes: EmployeeChanges) {
  return guardStatement(
    deps.db,
    "personWide",
    sql`exists (select 1 from ${memberships} where ${memberships.personId} = ${personId} and ${memberships.companyId} <> ${companyId})`,
    async () => {
      if (!(await belongsElsewhere(deps, companyId, personId))) return;
      await withoutPersonWideChanges(deps, personId, changes);
      throw conflict(
        "this person joined another company while the request ran, which changes what this company may change of them; nothing was changed, send the request again",
      );
    },
  );
}

/** Whether a PUT's `changes` touch what a person who belongs to another company too keeps to themselves (or their emails). */
export const touchesPersonWide = (changes: EmployeeChanges) =>
  changes.emails !== undefined ||
  (Object.keys(PERSON_WIDE) as (keyof typeof PERSON_WIDE)[]).some((key) => changes[key] !== undefined);

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
export async function withoutPersonWideChanges(deps: Deps, personId: number, changes: EmployeeChanges) {
  const { fields, changed } = await comparePersonWide(deps, personId, changes);
  if (changed.length > 0) {
    throw conflict(
      `this person also belongs to another company; their personal details can only be changed by them (${changed
        .map((key) => `\`${PERSON_WIDE[key]}\``)
        .join(", ")} would change); leave those fields out or send their current values`,
    );
  }
  return without(changes, fields);
}

/** For a person of this company alone: the changes without the person-wide fields sent with their current values. */
export async function withoutUnchangedPersonWide(deps: Deps, personId: number, changes: EmployeeChanges) {
  const { fields, changed } = await comparePersonWide(deps, personId, changes);
  return without(
    changes,
    fields.filter((key) => !changed.includes(key)),
  );
}

function without(changes: EmployeeChanges, fields: (keyof typeof PERSON_WIDE)[]): EmployeeChanges {
  const rest = { ...changes };
  for (const key of fields) delete rest[key];
  return rest;
}

/** The person-wide fields `changes` names, and those of them whose values differ from the person's now. */
async function comparePersonWide({ db }: Deps, personId: number, changes: EmployeeChanges) {
  const fields = (Object.keys(PERSON_WIDE) as (keyof typeof PERSON_WIDE)[]).filter((key) => changes[key] !== undefined);
  if (fields.length === 0) return { fields, changed: [] };
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
  return { fields, changed: fields.filter((key) => canonical(changes[key]) !== canonical(current[key])) };
}

/** JSON with object keys sorted, to compare values regardless of key order. */
function canonical(value: unknown): string {
  return JSON.stringify(value, (_, v: unknown) =>
    v && typeof v === "object" && !Array.isArray(v)
      ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => (a < b ? -1 : 1)))
      : v,
  );
}
