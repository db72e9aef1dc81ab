import { sql, type SQL } from "drizzle-orm";
import type { BatchItem } from "drizzle-orm/batch";
import type { Db } from "./client";
import { companyRosters, memberships } from "./schema";
import { batchableAll } from "./sql";

/**
 * Company rosters (the `company_rosters` table): a member's
 * `last_coworker_update` is the newest change of *another* member of their
 * companies. Scanning every member on each heartbeat costs in proportion to
 * the company (415 heartbeats/s at 5,000 members against 820 at a handful),
 * so each company keeps its newest change and whose it was, and the newest
 * change of anyone else: a member reads the first unless it is their own.
 *
 * A command that changes a member (their person record, or their membership:
 * joining, a new license) adds `touchRosters` to its batch. Times only move
 * forward; a removal leaves the roster as it was.
 */
export function touchRosters(
  db: Db,
  { personIds, companyId, at }: { personIds: number | SQL; companyId?: number; at: Date },
): BatchItem<"sqlite"> {
  const inCompany = companyId === undefined ? sql`` : sql`and ${memberships.companyId} = ${companyId}`;
  const r = companyRosters;
  // Upsert per membership, applied row by row: when the person already holds the newest change
  // it only moves forward; a newer change by someone else takes the first place and pushes the
  // old first down; an older one may still be the newest of "anyone else".
  return batchableAll(
    db,
    sql`insert into ${r} (company_id, first_person_id, first_at, second_at)
        select ${memberships.companyId}, ${memberships.personId}, ${at.getTime()}, null from ${memberships}
        where ${memberships.personId} in (${personIds}) ${inCompany}
        order by ${memberships.companyId}, ${memberships.personId}
        on conflict (company_id) do update set
          second_at = case
            when ${r.firstPersonId} = excluded.first_person_id then ${r.secondAt}
            when excluded.first_at >= ${r.firstAt} then ${r.firstAt}
            else max(coalesce(${r.secondAt}, excluded.first_at), excluded.first_at) end,
          first_person_id = case
            when ${r.firstPersonId} != excluded.first_person_id and excluded.first_at >= ${r.firstAt}
            then excluded.first_person_id else ${r.firstPersonId} end,
          first_at = max(${r.firstAt}, excluded.first_at)
        returning company_id`,
  );
}

/**
 * Rebuilds every roster from the members as they are (the demo world, which
 * inserts its rows directly; the migration that introduced rosters did the
 * same). A member's change time is the newer of their person record's and
 * their membership's.
 */
export function rebuildRosters(db: Db): BatchItem<"sqlite"> {
  return batchableAll(
    db,
    sql`insert or replace into ${companyRosters} (company_id, first_person_id, first_at, second_at)
        select ranked.company_id, ranked.person_id, ranked.t,
               (select max(max(p2.updated_at, m2.updated_at)) from memberships m2 join people p2 on p2.id = m2.person_id
                where m2.company_id = ranked.company_id and m2.person_id != ranked.person_id)
        from (select m.company_id, m.person_id, max(p.updated_at, m.updated_at) as t,
                     row_number() over (partition by m.company_id
                                        order by max(p.updated_at, m.updated_at) desc, m.person_id) as rn
              from memberships m join people p on p.id = m.person_id) ranked
        where ranked.rn = 1
        returning company_id`,
  );
}
