import { and, eq, sql, type SQL } from "drizzle-orm";
import type { Db } from "../../db/client";
import { guardStatement } from "../../db/guard";
import { touchRosters } from "../../db/rosters";
import {
  invitations,
  membershipRoles,
  memberships,
  people,
  personAddresses,
  personAkas,
  personEmails,
  personPhones,
} from "../../db/schema";
import { batchableAll } from "../../db/sql";
import { primaryOf, type AddressInput, type AkaInput, type NewEmployee, type PhoneInput } from "../../domain/employees";
import { conflict } from "../../lib/errors";
import type { WriteBatch } from "../outbox";
import { seatGuardStatement } from "../seats";

/**
 * The SQL of the employee commands: the statements that insert new
 * employees in bulk (a fixed handful per 100 employees) and those that
 * replace a person's collections, chunked under D1's bound-parameter limit.
 */

const EPHEMERAL_MS = 24 * 3600 * 1000;
const INVITATION_MS = 7 * 24 * 3600 * 1000;
/** Rows per multi-row insert: the widest collection row binds 8 values, under D1's 100. */
const ROWS_PER_INSERT = 10;
/**
 * Employees whose rows one INSERT carries: the rows travel as one JSON value
 * (one bound parameter) unpacked with `json_each`, so 1,000 employees take
 * about ten statements per table instead of several per employee, inside
 * D1's 100 parameters per statement and 1,000 statements per invocation
 * (https://developers.cloudflare.com/d1/platform/limits/).
 */
const EMPLOYEES_PER_INSERT = 100;

export type CheckedEmployee = NewEmployee & { roleIds: number[]; licenseId: string | null };

/**
 * Adds the statements that create `employees` to the batch, a fixed handful
 * per 100 employees whatever their collections: the people first (one
 * INSERT … SELECT per chunk, in input order), so inside the transaction
 * they take consecutive AUTOINCREMENT ids ending at max(id) and the k-th
 * employee is max(id) − n + 1 + k; every other row finds its person that way.
 * Returns the positions of the people inserts (their results are the ids).
 */
export function addNewEmployees(batch: WriteBatch, companyId: number, employees: CheckedEmployee[]): number[] {
  const { db } = batch.deps;
  const { now } = batch;
  const t = now.getTime();
  const n = employees.length;
  const firstId = sql`((select max(${people.id}) from ${people}) - ${n - 1})`;
  const personOf = sql`${firstId} + json_extract(j.value, '$.k')`;

  const rows = employees.map((employee, k) => {
    // The invitation's email carries no token (services/invitations.ts): its row keeps the address only.
    const invitation = employee.invite ? { email: primaryOf(employee.emails).email } : null;
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
  });
  const parts = chunks(rows, EMPLOYEES_PER_INSERT);

  const peopleInserts = parts.map((part) =>
    batch.add(
      batchableAll<{ id: number }>(
        db,
        sql`insert into ${people} (first_name, middle_name, last_name, dob, entered_by_company_id, created_at, updated_at)
            select json_extract(value, '$.first_name'), json_extract(value, '$.middle_name'),
                   json_extract(value, '$.last_name'), json_extract(value, '$.dob'), ${companyId}, ${t}, ${t}
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
  batch.markStaleCompany(companyId);
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
          select ${companyId}, ${personOf}, json_extract(j.value, '$.invitation.email'), '', ${t + INVITATION_MS}, ${t}
          from json_each(${JSON.stringify(part)}) j
          where json_extract(j.value, '$.invitation') is not null order by j.key`,
      ),
    );
  }
  // Two requests may both have seen the last seats free: the guard rolls the batch back.
  const seatsNeeded = new Map<string, number>();
  for (const { licenseId } of employees)
    if (licenseId) seatsNeeded.set(licenseId, (seatsNeeded.get(licenseId) ?? 0) + 1);
  for (const [licenseId, needed] of seatsNeeded) batch.add(seatGuardStatement(db, companyId, licenseId, needed));
  // Their phones now reach a platform person (caller records), and the company's webhooks hear of them.
  batch.markStaleNumbers([...new Set(employees.flatMap((employee) => employee.phones.map((phone) => phone.e164)))]);
  batch.emitPeople(
    "person:created",
    companyId,
    sql`select ${people.id} as id from ${people} where ${people.id} >= ${firstId}`,
  );
  return peopleInserts;
}

export function collectionInserts(
  db: Db,
  personId: number | SQL,
  input: { akas?: AkaInput[]; phones?: (PhoneInput & { confirmed?: boolean })[]; addresses?: AddressInput[] },
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
          confirmed: phone.confirmed ?? false,
        })),
      ),
    ),
    ...chunks(input.addresses ?? []).map((part) =>
      db.insert(personAddresses).values(part.map((address) => ({ personId, ...address }))),
    ),
  ];
}

export function chunks<T>(rows: T[], size = ROWS_PER_INSERT): T[][] {
  const parts: T[][] = [];
  for (let i = 0; i < rows.length; i += size) parts.push(rows.slice(i, i + size));
  return parts;
}

/** The numbers person `personId` confirmed themselves (a set, so each counts once). */
export async function confirmedNumbersOf(db: Db, personId: number): Promise<Set<string>> {
  const rows = await db
    .select({ e164: personPhones.e164 })
    .from(personPhones)
    .where(and(eq(personPhones.personId, personId), eq(personPhones.confirmed, true)))
    .all();
  return new Set(rows.map((row) => row.e164));
}

/**
 * The guard of a phone replacement that keeps the confirmed numbers it read (`confirmed`): the
 * batch rolls back when the person's confirmed numbers are no longer those, as when the operator
 * released one (a SIM swap) or the person proved one meanwhile, since the replacement would then
 * delete or keep the wrong rows; asked after a rollback, the same comparison answers a 409 to send
 * the request again.
 */
export function confirmationsGuardStatement(db: Db, personId: number, confirmed: Set<string>) {
  const read = JSON.stringify([...confirmed]);
  const now = sql`select ${personPhones.e164} from ${personPhones}
    where ${personPhones.personId} = ${personId} and ${personPhones.confirmed} = 1`;
  return guardStatement(
    db,
    "personWide",
    sql`(select count(*) from (${now})) <> ${confirmed.size}
      or exists (select 1 from (${now}) c where c.e164 not in (select value from json_each(${read})))`,
    async () => {
      const current = await confirmedNumbersOf(db, personId);
      if (current.size !== confirmed.size || [...current].some((e164) => !confirmed.has(e164)))
        throw conflict(
          "this person's confirmed phone numbers changed while the request ran; nothing was changed, send it again",
        );
    },
  );
}
