import { eq, sql, type SQL } from "drizzle-orm";
import type { AnySQLiteColumn } from "drizzle-orm/sqlite-core";
import type { Db } from "./client";
import { companies as companyRows, memberships, people, secureNumbers } from "./schema";
import { inList } from "./sql";
import { groupBy } from "../lib/group";
import type { Facts, Profile } from "../domain/facts";

/** D1's facts about these people (a person gone, or without a number, has `e164` null), in one batch. */
export async function factsOf(db: Db, personIds: number[]): Promise<Facts[]> {
  const found = await factsWhere(db, (personId) => inList(personId, personIds));
  // A person D1 does not know (gone, or not yet on a lagging replica): no number, no company, the lowest version.
  return personIds.map(
    (personId) =>
      found.get(personId) ?? {
        personId,
        e164: null,
        companies: [],
        version: 0,
        countryCode: null,
        number: null,
        userAt: null,
        membershipAt: null,
        profile: null,
      },
  );
}

/** D1's facts about the holder of secure number `e164` (null: nobody holds it), in one batch. */
export async function factsOfNumber(db: Db, e164: string): Promise<Facts | null> {
  const found = await factsWhere(
    db,
    (personId) => sql`${personId} = (select person_id from ${secureNumbers} where e164 = ${e164})`,
  );
  const [facts] = found.values();
  return facts?.e164 === e164 ? facts : null;
}

/**
 * The facts of the people whose id `selects` (a condition on a person-id
 * column), by person: one batch of two reads, the people with their names
 * and secure number, and their memberships with each company's name and the
 * roles held there (the profile `GET /me` shows, ordered as it shows them).
 */
async function factsWhere(db: Db, selects: (personId: AnySQLiteColumn) => SQL | undefined) {
  const [holders, companies] = await db.batch([
    db
      .select({
        personId: people.id,
        version: people.factsVersion,
        at: people.updatedAt,
        first_name: people.firstName,
        middle_name: people.middleName,
        last_name: people.lastName,
        e164: secureNumbers.e164,
        countryCode: secureNumbers.countryCode,
        number: secureNumbers.number,
      })
      .from(people)
      .leftJoin(secureNumbers, eq(secureNumbers.personId, people.id))
      .where(selects(people.id)),
    db
      .select({
        personId: memberships.personId,
        id: memberships.companyId,
        at: memberships.updatedAt,
        name: companyRows.name,
        roles: sql<string>`(select json_group_array(name) from (select r.name from membership_roles mr
          join roles r on r.id = mr.role_id where mr.membership_id = ${memberships.id} order by r.name))`,
      })
      .from(memberships)
      .innerJoin(companyRows, eq(companyRows.id, memberships.companyId))
      .where(selects(memberships.personId))
      .orderBy(memberships.companyId),
  ]);
  const companiesOf = groupBy(companies, (row) => row.personId);
  return new Map<number, Facts>(
    holders.map((person) => {
      const own = companiesOf.get(person.personId) ?? [];
      const profile: Profile = {
        first_name: person.first_name,
        middle_name: person.middle_name,
        last_name: person.last_name,
        companies: own.map((row) => ({ id: row.id, name: row.name, roles: JSON.parse(row.roles) as string[] })),
      };
      return [
        person.personId,
        {
          personId: person.personId,
          e164: person.e164,
          companies: own.map((row) => row.id),
          version: person.version,
          countryCode: person.countryCode,
          number: person.number,
          userAt: person.at.getTime(),
          membershipAt: newestOf(own.map((row) => row.at.getTime())),
          profile,
        },
      ];
    }),
  );
}

/** The newest of these times (ms); null when there is none. */
export const newestOf = (times: (number | null)[]): number | null =>
  times.reduce<number | null>((max, t) => (t === null ? max : max === null ? t : Math.max(max, t)), null);
