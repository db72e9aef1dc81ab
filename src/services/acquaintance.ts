import { sql, type SQL } from "drizzle-orm";

/*
 * Who *knows* whom (docs/security.md, "What a stranger learns"): the rule
 * behind the avatars, risk scores and call-lookup people the API shows about
 * another party, as SQL fragments, so each list reads it in the same query as
 * its rows. The activity feed and the streams apply the same rule in the
 * person's object (objects/person/peers.ts).
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
