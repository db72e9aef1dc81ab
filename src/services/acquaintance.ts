import { sql, type SQL } from "drizzle-orm";

/*
 * Who *knows* whom (docs/security.md, "What a stranger learns"): the one rule
 * behind every name, avatar and risk score the API shows about another party.
 * SQL fragments, so each list reads it in the same query as its rows.
 */

/**
 * Whether person `person` (an SQL expression) knows person `otherId`: it is
 * that person, they share a company, or `person` trusted `otherId` (`trusted = 1`).
 */
export const knowsPerson = (person: SQL, otherId: number) => sql`(
  ${person} = ${otherId}
  or exists (select 1 from memberships theirs join memberships mine on mine.company_id = theirs.company_id
             where theirs.person_id = ${person} and mine.person_id = ${otherId})
  or exists (select 1 from person_trust pt
             where pt.person_id = ${person} and pt.trusted_person_id = ${otherId} and pt.trusted = 1)
)`;

/** Whether company `company` (an SQL expression) knows person `personId`: they are one of its members. */
export const knowsMember = (company: SQL, personId: number) =>
  sql`exists (select 1 from memberships km where km.company_id = ${company} and km.person_id = ${personId})`;
