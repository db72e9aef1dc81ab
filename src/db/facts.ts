import type { Db } from "./client";
import { memberships, people, secureNumbers } from "./schema";
import { inList } from "./sql";
import { groupBy } from "../lib/group";
import type { Facts } from "../domain/facts";

/** D1's facts about these people (a person gone, or without a number, has `e164` null), in one batch. */
export async function factsOf(db: Db, personIds: number[]): Promise<Facts[]> {
  const [numbers, companies, versions] = await db.batch([
    db
      .select({ personId: secureNumbers.personId, e164: secureNumbers.e164 })
      .from(secureNumbers)
      .where(inList(secureNumbers.personId, personIds)),
    db
      .select({ personId: memberships.personId, id: memberships.companyId })
      .from(memberships)
      .where(inList(memberships.personId, personIds)),
    db.select({ personId: people.id, version: people.factsVersion }).from(people).where(inList(people.id, personIds)),
  ]);
  const companiesOf = groupBy(companies, (row) => row.personId);
  return personIds.map((personId) => ({
    personId,
    e164: numbers.find((row) => row.personId === personId)?.e164 ?? null,
    companies: (companiesOf.get(personId) ?? []).map((row) => row.id),
    // A person D1 does not know (gone, or not yet on a lagging replica): the lowest version.
    version: versions.find((row) => row.personId === personId)?.version ?? 0,
  }));
}
