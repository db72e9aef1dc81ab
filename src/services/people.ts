import { and, eq, isNotNull, sql, type SQLWrapper } from "drizzle-orm";
import { union } from "drizzle-orm/sqlite-core";
import type { Db } from "../db/client";
import { batchableAll } from "../db/sql";
import { groupBy } from "../lib/group";
import { people, personEmails, personPhones, secureNumbers } from "../db/schema";
import { exposureMark, exposuresJson, fillExposureCounts, objectExposureCounts } from "./exposure-counts";
import type { Deps } from "./deps";

/**
 * The API's Person (OpenAPI component `Person`; docs/decisions.md, "The Person"): every field
 * always present, null where there is no value.
 */
/** A person's full name: first, middle and last, those present, joined by spaces. */
export const displayName = (p: { firstName: string; middleName: string | null; lastName: string }) =>
  [p.firstName, p.middleName, p.lastName].filter(Boolean).join(" ");

/**
 * Whether a person can be reached end to end: they saved both encryption identifiers
 * (docs/decisions.md, "Encryption identifiers").
 */
export const e2eeColumn = sql<number>`(${people.encryptionHash} is not null and ${people.e2eId} is not null)`;

/**
 * The person who owns number `e164`: it is their secure number or a phone
 * they confirmed (at most one person each; docs/decisions.md).
 */
export const ownerOfNumber = (db: Db, e164: string) =>
  union(
    db
      .select({ id: sql<number>`${secureNumbers.personId}` })
      .from(secureNumbers)
      .where(and(eq(secureNumbers.e164, e164), isNotNull(secureNumbers.personId))),
    db
      .select({ id: personPhones.personId })
      .from(personPhones)
      .where(and(eq(personPhones.e164, e164), eq(personPhones.confirmed, true))),
  ).limit(1);

export type PersonBody = {
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

/**
 * Which people to read: a list of ids (answered in that order), or a select
 * of one column `person_id`, ordered and limited (a query builder, embedded
 * as a subquery; answered by id).
 */
export type PersonIds = readonly number[] | SQLWrapper;

type BaseRow = {
  id: number;
  first_name: string;
  middle_name: string | null;
  last_name: string;
  dob: string | null;
  risk_score: number;
  last_scan_at: number | null;
  last_login_at: number | null;
  created_at: number;
  license_id: string | null;
  price: number | null;
  license_start_at: number | null;
  license_end_at: number | null;
  license_renews: number;
  license_prorate_on_renewal: number;
};
type EmailRow = { person_id: number; id: number; email: string; primary: number; managed: number };
type PhoneRow = {
  person_id: number;
  id: number;
  country_code: string;
  phone_number: string;
  e164: string;
  primary: number;
};
type AddressRow = {
  person_id: number;
  id: number;
  primary: number;
  line_1: string;
  line_2: string | null;
  city: string;
  region: string;
  postal_code: string;
  country: string;
};
type AkaRow = {
  person_id: number;
  id: number;
  first_name: string;
  middle_name: string | null;
  last_name: string | null;
};

/**
 * The reads behind a list of Persons (docs/performance.md, "Lists"), as
 * statements for one `db.batch`, and `render`, which writes their results
 * straight into the JSON text of the list: no row objects of drizzle's, no
 * Person objects, one serialisation. Each statement reads only the columns a
 * Person shows; the collections are read for the people of `ids` by the
 * person index, whatever their number.
 */
export function peopleReads(
  db: Db,
  companyId: number,
  ids: PersonIds,
  /**
   * Where the company's scan side lives (`companies.scans_in_object`): D1, read by this batch; or the
   * company's object, whose counts `render` leaves marks for (`fillExposureCounts`, `objectExposureCounts`).
   */
  scansInObject = false,
) {
  const list = Array.isArray(ids);
  const idList = list ? JSON.stringify(ids) : "";
  const wanted = list ? sql`json_each(${idList}) wanted` : sql`${ids} wanted`;
  const wantedId = list ? sql`wanted.value` : sql`wanted.person_id`;
  const order = list ? sql`wanted.key` : sql`wanted.person_id`;
  const among = list ? sql`select value from json_each(${idList})` : sql`select person_id from ${ids}`;
  const statements = [
    batchableAll<BaseRow>(
      db,
      sql`select p.id, p.first_name, p.middle_name, p.last_name, p.dob, p.risk_score, p.last_scan_at, p.last_login_at,
            p.created_at, m.license_id, l.price, m.license_start_at, m.license_end_at, m.license_renews,
            m.license_prorate_on_renewal
          from ${wanted}
          join memberships m on m.company_id = ${companyId} and m.person_id = ${wantedId}
          join people p on p.id = m.person_id
          left join licenses l on l.id = m.license_id
          order by ${order}`,
    ),
    // The emails a company sees: the person's own and the ones this company added (`managed`).
    batchableAll<EmailRow>(
      db,
      sql`select person_id, id, email, "primary", employer_company_id is not null as managed from person_emails
          where person_id in (${among}) and ${visibleEmail(companyId)} order by id`,
    ),
    batchableAll<PhoneRow>(
      db,
      sql`select person_id, id, country_code, phone_number, e164, "primary" from person_phones
          where person_id in (${among}) order by id`,
    ),
    batchableAll<AddressRow>(
      db,
      sql`select person_id, id, "primary", line_1, line_2, city, region, postal_code, country from person_addresses
          where person_id in (${among}) order by id`,
    ),
    batchableAll<AkaRow>(
      db,
      sql`select person_id, id, first_name, middle_name, last_name from person_akas
          where person_id in (${among}) order by id`,
    ),
    batchableAll<{ person_id: number; name: string }>(
      db,
      sql`select m.person_id, r.name from memberships m
          join membership_roles mr on mr.membership_id = m.id
          join roles r on r.id = mr.role_id
          where m.company_id = ${companyId} and m.person_id in (${among}) order by r.id`,
    ),
  ] as const;
  // What D1 knows of the people's exposures, for a company whose scan side is D1's (else its object answers).
  const exposureStatements = [
    batchableAll<{ person_id: number; status: "pending" | "in_progress" | "closed"; n: number }>(
      db,
      sql`select person_id, status, count(*) as n from exposures where person_id in (${among})
          group by person_id, status`,
    ),
    // Sites whose latest conclusive result for the person is "not found".
    batchableAll<{ person_id: number; n: number }>(
      db,
      sql`select s.person_id, count(distinct s.site_id) as n from scan_results s
          where s.person_id in (${among}) and s.outcome = 'not_found' and not exists (
            select 1 from scan_results later where later.person_id = s.person_id and later.site_id = s.site_id
              and later.outcome = 'found' and later.at > s.at)
          group by s.person_id`,
    ),
  ] as const;
  type Results = [
    BaseRow[],
    EmailRow[],
    PhoneRow[],
    AddressRow[],
    AkaRow[],
    { person_id: number; name: string }[],
    { person_id: number; status: "pending" | "in_progress" | "closed"; n: number }[],
    { person_id: number; n: number }[],
  ];
  /**
   * The JSON array of the Persons read, in the order asked (ids that are no member here are left out).
   * For a company whose scan side is in its object, each Person's `exposures` is a mark to fill
   * (`fillExposureCounts`): the rendering of the rest can be kept while the counts change.
   */
  const render = (results: unknown[]): string => {
    const [bases, emails, phones, addresses, akas, roles, ...rest] = results as Results;
    const [exposureRows, notFoundRows] = scansInObject ? [[], []] : (rest as [Results[6], Results[7]]);
    const emailsOf = groupBy(emails, (row) => row.person_id);
    const phonesOf = groupBy(phones, (row) => row.person_id);
    const addressesOf = groupBy(addresses, (row) => row.person_id);
    const akasOf = groupBy(akas, (row) => row.person_id);
    const rolesOf = groupBy(roles, (row) => row.person_id);
    const exposuresOf = groupBy(exposureRows, (row) => row.person_id);
    const notFound = new Map(notFoundRows.map((row) => [row.person_id, row.n]));
    return `[${bases
      .map((base) =>
        renderPerson(base, {
          emails: emailsOf.get(base.id) ?? [],
          phones: phonesOf.get(base.id) ?? [],
          addresses: addressesOf.get(base.id) ?? [],
          akas: akasOf.get(base.id) ?? [],
          roles: rolesOf.get(base.id) ?? [],
          exposures: scansInObject
            ? exposureMark(base.id)
            : exposuresJson(exposuresOf.get(base.id) ?? [], notFound.get(base.id) ?? 0),
        }),
      )
      .join(",")}]`;
  };
  return { statements: scansInObject ? statements : ([...statements, ...exposureStatements] as const), render };
}

/** JSON of a string or null (JSON.stringify escapes exactly as the answer needs). */
const str = (value: string | null) => JSON.stringify(value);
const bool = (value: number | boolean) => (value ? "true" : "false");
/** `Date.prototype.toISOString` of integer milliseconds, as JSON; null stays null. */
const isoJson = (ms: number | null) => (ms === null ? "null" : `"${new Date(ms).toISOString()}"`);

/** One Person (OpenAPI component `Person`) as JSON text, its keys in the order of the `Person` type. */
function renderPerson(
  base: BaseRow,
  of: {
    emails: EmailRow[];
    phones: PhoneRow[];
    addresses: AddressRow[];
    akas: AkaRow[];
    roles: { name: string }[];
    /** The `exposures` object's JSON text (or the mark where the company's object fills it). */
    exposures: string;
  },
): string {
  // One primary where the person has one: the company's own choice (an address it manages)
  // comes before the person's own primary, which another company may not have chosen.
  const managedPrimary = of.emails.some((row) => row.primary && row.managed);
  const name = displayName({ firstName: base.first_name, middleName: base.middle_name, lastName: base.last_name });
  const license =
    base.license_id === null
      ? "null"
      : `{"type":${str(base.license_id)},"price":${base.price ?? 0},"start_date":${isoJson(base.license_start_at)},` +
        `"end_date":${isoJson(base.license_end_at)},"renews":${base.license_renews ? 1 : 0},` +
        `"prorate_on_renewal":${base.license_prorate_on_renewal ? 1 : 0}}`;
  return (
    `{"id":${base.id},"first_name":${str(base.first_name)},"middle_name":${str(base.middle_name)},` +
    `"last_name":${str(base.last_name)},"display_name":${str(name)},"dob":${str(base.dob)},` +
    `"akas":[${of.akas
      .map(
        (aka) =>
          `{"id":${aka.id},"first_name":${str(aka.first_name)},"middle_name":${str(aka.middle_name)},"last_name":${str(aka.last_name)}}`,
      )
      .join(",")}],` +
    `"addresses":[${of.addresses
      .map(
        (a) =>
          `{"id":${a.id},"primary":${bool(a.primary)},"line_1":${str(a.line_1)},"line_2":${str(a.line_2)},` +
          `"city":${str(a.city)},"region":${str(a.region)},"postal_code":${str(a.postal_code)},"country":${str(a.country)}}`,
      )
      .join(",")}],` +
    `"emails":[${of.emails
      .map(
        (e) => `{"id":${e.id},"primary":${bool(e.primary && (!managedPrimary || e.managed))},"email":${str(e.email)}}`,
      )
      .join(",")}],` +
    `"phone_numbers":[${of.phones
      .map(
        (ph) =>
          `{"id":${ph.id},"primary":${bool(ph.primary)},"country_code":${str(ph.country_code)},` +
          `"phone_number":${str(ph.phone_number)},"phone_full":${str(ph.e164)}}`,
      )
      .join(",")}],` +
    `"last_scan_at":${isoJson(base.last_scan_at)},"license":${license},` +
    `"roles":[${of.roles.map((role) => str(role.name)).join(",")}],"risk_score":${base.risk_score},` +
    `"exposures":${of.exposures},` +
    `"last_login":${isoJson(base.last_login_at)},"created_at":${isoJson(base.created_at)}}`
  );
}

/**
 * Loads the people of `personIds` who are members of `companyId`, as
 * Persons in the order given; ids that are not members are left out.
 * One D1 round trip, whatever the number of people; for a company whose scan
 * side is in its object, beside one call of that object (`scansInObject`, when
 * the caller read it with the company; else read in the same round trip).
 */
export async function loadPeople(
  deps: Deps,
  companyId: number,
  personIds: number[],
  scansInObject?: boolean,
): Promise<PersonBody[]> {
  if (personIds.length === 0) return [];
  const { db } = deps;
  const inObject = scansInObject ?? false;
  const reads = peopleReads(db, companyId, personIds, inObject);
  const [first, ...rest] = reads.statements;
  const flag = batchableAll<{ in_object: number }>(
    db,
    sql`select scans_in_object as in_object from companies where id = ${companyId}`,
  );
  if (scansInObject === undefined) {
    // The flag is read with the people; a company in its object then re-renders without D1's counts.
    const [flagged, ...results] = await db.batch([flag, first, ...rest]);
    if (!(flagged as { in_object: number }[])[0]?.in_object) return JSON.parse(reads.render(results)) as PersonBody[];
    const marked = peopleReads(db, companyId, personIds, true).render(results);
    return JSON.parse(await objectExposureCounts(deps, companyId, marked)) as PersonBody[];
  }
  if (!inObject) return JSON.parse(reads.render(await db.batch([first, ...rest]))) as PersonBody[];
  const [results, counts] = await Promise.all([
    db.batch([first, ...rest]),
    deps.companyObjects.of(companyId).exposureCounts(personIds),
  ]);
  return JSON.parse(fillExposureCounts(reads.render(results), counts)) as PersonBody[];
}

/** One employee of the company as a Person, or null when the id is not an employee there. */
export async function loadPerson(
  deps: Deps,
  companyId: number,
  personId: number,
  scansInObject?: boolean,
): Promise<PersonBody | null> {
  const [person] = await loadPeople(deps, companyId, [personId], scansInObject);
  return person ?? null;
}
