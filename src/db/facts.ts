import type { Db } from "./client";
import { memberships, people, secureNumbers } from "./schema";
import { inList } from "./sql";
import { groupBy } from "../lib/group";
import type { Facts } from "../domain/facts";

/** D1's facts about these people (a person gone, or without a number, has `e164` null), in one batch. */
export async function factsOf(db: Db, personIds: number[]): Promise<Facts[]> {
  const [numbers, companies, versions] = await db.batch([
    db
      .select({
        personId: secureNumbers.personId,
        e164: secureNumbers.e164,
        countryCode: secureNumbers.countryCode,
        number: secureNumbers.number,
      })
      .from(secureNumbers)
      .where(inList(secureNumbers.personId, personIds)),
    db
      .select({ personId: memberships.personId, id: memberships.companyId, at: memberships.updatedAt })
      .from(memberships)
      .where(inList(memberships.personId, personIds)),
    db
      .select({ personId: people.id, version: people.factsVersion, at: people.updatedAt })
      .from(people)
      .where(inList(people.id, personIds)),
  ]);
  const companiesOf = groupBy(companies, (row) => row.personId);
  return personIds.map((personId) => {
    const number = numbers.find((row) => row.personId === personId);
    const person = versions.find((row) => row.personId === personId);
    const own = companiesOf.get(personId) ?? [];
    return {
      personId,
      e164: number?.e164 ?? null,
      companies: own.map((row) => row.id),
      // A person D1 does not know (gone, or not yet on a lagging replica): the lowest version.
      version: person?.version ?? 0,
      countryCode: number?.countryCode ?? null,
      number: number?.number ?? null,
      userAt: person ? person.at.getTime() : null,
      membershipAt: newestOf(own.map((row) => row.at.getTime())),
    };
  });
}

/** The newest of these times (ms); null when there is none. */
export const newestOf = (times: (number | null)[]): number | null =>
  times.reduce<number | null>((max, t) => (t === null ? max : max === null ? t : Math.max(max, t)), null);
