import { and, asc, count, eq, gt, isNotNull, notExists, sql } from "drizzle-orm";
import { alias, union } from "drizzle-orm/sqlite-core";
import type { Db } from "../db/client";
import { inList } from "../db/sql";
import {
  exposures,
  licenses,
  membershipRoles,
  memberships,
  people,
  personAddresses,
  personAkas,
  personEmails,
  personPhones,
  roles,
  scanResults,
  secureNumbers,
} from "../db/schema";
import { groupBy } from "../lib/group";
import { iso } from "../lib/time";

/** The Person of [seed 2.10]: every field always present, null where there is no value (docs/decisions.md). */
/** A person's full name: first, middle and last, those present, joined by spaces. */
export const displayName = (p: { firstName: string; middleName: string | null; lastName: string }) =>
  [p.firstName, p.middleName, p.lastName].filter(Boolean).join(" ");

/** Whether a person can be reached end to end: they saved both encryption identifiers [seed 2.6]. */
export const e2eeColumn = sql<number>`(${people.encryptionHash} is not null and ${people.e2eId} is not null)`;

/** Ids of the people a number reaches: by one of their phones or by their secure number (docs/decisions.md). */
export const holdersOfNumber = (db: Db, e164: string) =>
  union(
    db.select({ id: personPhones.personId }).from(personPhones).where(eq(personPhones.e164, e164)),
    db
      .select({ id: sql<number>`${secureNumbers.personId}` })
      .from(secureNumbers)
      .where(and(eq(secureNumbers.e164, e164), isNotNull(secureNumbers.personId))),
  );

export type Person = {
  id: number;
  first_name: string;
  middle_name: string | null;
  last_name: string;
  display_name: string;
  dob: string | null;
  akas: { id: number; first_name: string; middle_name: string | null; last_name: string | null }[];
  addresses: {
    id: number;
    primary: boolean;
    line_1: string;
    line_2: string | null;
    city: string;
    region: string;
    postal_code: string;
    country: string;
  }[];
  emails: { id: number; primary: boolean; email: string }[];
  phone_numbers: { id: number; primary: boolean; country_code: string; phone_number: string; phone_full: string }[];
  last_scan_at: string | null;
  license: {
    type: string;
    price: number;
    start_date: string | null;
    end_date: string | null;
    renews: 0 | 1;
    prorate_on_renewal: 0 | 1;
  } | null;
  roles: string[];
  risk_score: number;
  exposures: { total: number; pending: number; in_progress: number; closed: number; not_found: number };
  last_login: string | null;
  created_at: string;
};

/**
 * The emails a company sees of a person: the person's own and the ones this
 * company added; another employer's addresses stay private to that employer.
 * Written with `coalesce` rather than `is null or =`, so SQLite does not pick
 * the employer index over the email or person index that should drive a query.
 */
export const visibleEmail = (companyId: number) =>
  sql`coalesce(${personEmails.employerCompanyId}, ${companyId}) = ${companyId}`;

const laterFound = alias(scanResults, "later_found");

/**
 * Loads the people of `personIds` who are members of `companyId`, as
 * Persons in the order given; ids that are not members are left out.
 * One D1 round trip of eight queries, whatever the number of people.
 */
export async function loadPeople(db: Db, companyId: number, personIds: number[]): Promise<Person[]> {
  if (personIds.length === 0) return [];
  const [bases, emails, phones, addresses, akas, roleRows, exposureRows, notFoundRows] = await db.batch([
    db
      .select({
        id: people.id,
        firstName: people.firstName,
        middleName: people.middleName,
        lastName: people.lastName,
        dob: people.dob,
        riskScore: people.riskScore,
        lastScanAt: people.lastScanAt,
        lastLoginAt: people.lastLoginAt,
        createdAt: people.createdAt,
        licenseId: memberships.licenseId,
        licensePrice: licenses.price,
        licenseStartAt: memberships.licenseStartAt,
        licenseEndAt: memberships.licenseEndAt,
        licenseRenews: memberships.licenseRenews,
        licenseProrate: memberships.licenseProrateOnRenewal,
      })
      .from(memberships)
      .innerJoin(people, eq(people.id, memberships.personId))
      .leftJoin(licenses, eq(licenses.id, memberships.licenseId))
      .where(and(eq(memberships.companyId, companyId), inList(memberships.personId, personIds))),
    db
      .select()
      .from(personEmails)
      .where(and(inList(personEmails.personId, personIds), visibleEmail(companyId)))
      .orderBy(asc(personEmails.id)),
    db.select().from(personPhones).where(inList(personPhones.personId, personIds)).orderBy(asc(personPhones.id)),
    db
      .select()
      .from(personAddresses)
      .where(inList(personAddresses.personId, personIds))
      .orderBy(asc(personAddresses.id)),
    db.select().from(personAkas).where(inList(personAkas.personId, personIds)).orderBy(asc(personAkas.id)),
    db
      .select({ personId: memberships.personId, name: roles.name })
      .from(membershipRoles)
      .innerJoin(memberships, eq(memberships.id, membershipRoles.membershipId))
      .innerJoin(roles, eq(roles.id, membershipRoles.roleId))
      .where(and(eq(memberships.companyId, companyId), inList(memberships.personId, personIds)))
      .orderBy(asc(roles.id)),
    db
      .select({ personId: exposures.personId, status: exposures.status, n: count() })
      .from(exposures)
      .where(inList(exposures.personId, personIds))
      .groupBy(exposures.personId, exposures.status),
    // Sites whose latest conclusive result for the person is "not found".
    db
      .select({ personId: scanResults.personId, n: sql<number>`count(distinct ${scanResults.siteId})` })
      .from(scanResults)
      .where(
        and(
          inList(scanResults.personId, personIds),
          eq(scanResults.outcome, "not_found"),
          notExists(
            db
              .select({ one: sql`1` })
              .from(laterFound)
              .where(
                and(
                  eq(laterFound.personId, scanResults.personId),
                  eq(laterFound.siteId, scanResults.siteId),
                  eq(laterFound.outcome, "found"),
                  gt(laterFound.at, scanResults.at),
                ),
              ),
          ),
        ),
      )
      .groupBy(scanResults.personId),
  ]);

  const byPerson = <T extends { personId: number }>(rows: T[]) => {
    const map = groupBy(rows, (row) => row.personId);
    return (id: number) => map.get(id) ?? [];
  };
  const emailsOf = byPerson(emails);
  const phonesOf = byPerson(phones);
  const addressesOf = byPerson(addresses);
  const akasOf = byPerson(akas);
  const rolesOf = byPerson(roleRows);
  const exposuresOf = byPerson(exposureRows);
  const notFound = new Map(notFoundRows.map((row) => [row.personId, Number(row.n)]));
  const baseById = new Map(bases.map((row) => [row.id, row]));

  return personIds.flatMap((id) => {
    const base = baseById.get(id);
    if (!base) return [];
    const counts = { pending: 0, in_progress: 0, closed: 0 };
    for (const row of exposuresOf(id)) counts[row.status] = row.n;
    const person: Person = {
      id: base.id,
      first_name: base.firstName,
      middle_name: base.middleName,
      last_name: base.lastName,
      display_name: displayName(base),
      dob: base.dob,
      akas: akasOf(id).map((aka) => ({
        id: aka.id,
        first_name: aka.firstName,
        middle_name: aka.middleName,
        last_name: aka.lastName,
      })),
      addresses: addressesOf(id).map((address) => ({
        id: address.id,
        primary: address.primary,
        line_1: address.line1,
        line_2: address.line2,
        city: address.city,
        region: address.region,
        postal_code: address.postalCode,
        country: address.country,
      })),
      emails: shownEmails(emailsOf(id), companyId),
      phone_numbers: phonesOf(id).map((phone) => ({
        id: phone.id,
        primary: phone.primary,
        country_code: phone.countryCode,
        phone_number: phone.phoneNumber,
        phone_full: phone.e164,
      })),
      last_scan_at: iso(base.lastScanAt),
      license:
        base.licenseId === null
          ? null
          : {
              type: base.licenseId,
              price: base.licensePrice ?? 0,
              start_date: iso(base.licenseStartAt),
              end_date: iso(base.licenseEndAt),
              renews: base.licenseRenews ? 1 : 0,
              prorate_on_renewal: base.licenseProrate ? 1 : 0,
            },
      roles: rolesOf(id).map((role) => role.name),
      risk_score: base.riskScore,
      exposures: {
        total: counts.pending + counts.in_progress + counts.closed,
        ...counts,
        not_found: notFound.get(id) ?? 0,
      },
      last_login: iso(base.lastLoginAt),
      created_at: iso(base.createdAt)!,
    };
    return [person];
  });
}

/**
 * The emails a company sees, with exactly one primary where the person has
 * one: the company's own choice (an address it manages) comes before the
 * person's own primary, which another company may not have chosen.
 */
function shownEmails(
  rows: { id: number; primary: boolean; email: string; employerCompanyId: number | null }[],
  companyId: number,
): Person["emails"] {
  const managedPrimary = rows.some((row) => row.primary && row.employerCompanyId === companyId);
  return rows.map((row) => ({
    id: row.id,
    primary: row.primary && (!managedPrimary || row.employerCompanyId === companyId),
    email: row.email,
  }));
}

/** One employee of the company as a Person, or null when the id is not an employee there. */
export async function loadPerson(db: Db, companyId: number, personId: number): Promise<Person | null> {
  const [person] = await loadPeople(db, companyId, [personId]);
  return person ?? null;
}
