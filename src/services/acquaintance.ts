import { sql, type SQL } from "drizzle-orm";

/*
 * Who *knows* whom (docs/security.md, "What a stranger learns"): the one rule
 * behind every name, avatar and risk score the API shows about another party.
 * SQL fragments, so each list reads it in the same query as its rows.
 */

/**
 * Whether person `person` (an SQL expression) knows person `otherId`: it is
 * that person, they share a company, or `person` trusted `otherId`.
 * `trustedOther`: the people who trusted `otherId`, as `otherId`'s object
 * knows them (its mirror of others' decisions; bound as one JSON value).
 */
export const knowsPerson = (person: SQL, otherId: number, trustedOther: number[]) => sql`(
  ${person} = ${otherId}
  or exists (select 1 from memberships theirs join memberships mine on mine.company_id = theirs.company_id
             where theirs.person_id = ${person} and mine.person_id = ${otherId})
  or ${person} in (select value from json_each(${JSON.stringify(trustedOther)}))
)`;

/** Whether company `company` (an SQL expression) knows person `personId`: they are one of its members. */
export const knowsMember = (company: SQL, personId: number) =>
  sql`exists (select 1 from memberships km where km.company_id = ${company} and km.person_id = ${personId})`;
