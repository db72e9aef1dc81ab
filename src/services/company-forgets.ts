import { and, eq, sql } from "drizzle-orm";
import type { Db } from "../db/client";
import { companyForgets } from "../db/schema";
import { backoffSql, batchableAll } from "../db/sql";
import type { Backoff } from "../lib/backoff";
import { logError } from "../lib/log";
import type { Deps } from "./deps";

/*
 * People a company's object must forget (docs/architecture.md, "The Company object"): a membership
 * ended in a company whose scan side lives in its object (`companies.scans_in_object`), so the
 * person's scans, results and exposures there go. The batch that ends the membership records a
 * `company_forgets` row (`forgetStatement`); right after the commit the object is told and the row
 * goes; the minute sweep (`forget-people`) tells the objects of rows left behind.
 */

/** A person their company's object must forget, and when their membership ended. */
export type Forget = { companyId: number; personId: number; dueAt: number };

/** Rows one sweep chunk takes (one object call per company among them). */
export const FORGET_CHUNK = 100;

/** After a failed call a row waits 1, 2, 4 … minutes before the sweep tries it again, at most an hour. */
export const FORGET_RETRY: Backoff = { base: 60_000, cap: 3_600_000 };

/**
 * The statement recording that companies' objects must forget people, for the batch that deletes
 * their memberships (placed after those deletes; one statement whatever their number): a row for
 * each pair whose company keeps its scan side in its object and whose membership is gone at this
 * point of the batch. A row left from an earlier removal takes the later time. Returns the rows
 * it wrote (`Forget`).
 */
export const forgetStatement = (db: Db, pairs: Pair[]) => batchableAll<Forget>(db, forgetSql(pairs));

type Pair = { companyId: number; personId: number };

/**
 * How far past the end of a membership a forget reaches: the object stamps what it records with its
 * own clock, which may run a little ahead of D1's on another machine.
 */
const CLOCK_SLACK_MS = 1000;

/**
 * When a membership ended, as the object is told to forget up to: D1's clock as the statement runs (the
 * commit that ended it), not a time the Worker took before. A batch's own time can be seconds earlier (the
 * hourly purge's is the cron's scheduled time), and a scan run landing in between, whose check still found
 * a member, would otherwise outlive the membership. Milliseconds, as the triggers of drizzle/0026 write them.
 */
const endedAt = sql`cast((julianday('now') - 2440587.5) * 86400000 as integer) + ${CLOCK_SLACK_MS}`;

const forgetSql = (pairs: Pair[]) =>
  sql`insert into ${companyForgets} (company_id, person_id, due_at)
        select c.id, json_extract(f.value, '$.personId'), ${endedAt}
        from json_each(${JSON.stringify(pairs)}) f
        join companies c on c.id = json_extract(f.value, '$.companyId') and c.scans_in_object = 1
        where not exists (select 1 from memberships m
          where m.company_id = c.id and m.person_id = json_extract(f.value, '$.personId'))
        on conflict (company_id, person_id) do update
          set due_at = max(due_at, excluded.due_at), retry_at = 0, attempts = 0
        returning company_id as companyId, person_id as personId, due_at as dueAt`;

/**
 * A person coming back to a company their object has not yet forgotten (the call after their
 * removal failed, the sweep has not come): it forgets now what it holds of them from before, so
 * a listing found after their return is not merged into an exposure the sweep then deletes. One
 * D1 read; a failed call leaves the row for the sweep.
 */
export async function forgetBeforeReturn(deps: Deps, companyId: number, personId: number): Promise<void> {
  const due = await deps.db
    .select({ companyId: companyForgets.companyId, personId: companyForgets.personId, dueAt: companyForgets.dueAt })
    .from(companyForgets)
    .where(and(eq(companyForgets.companyId, companyId), eq(companyForgets.personId, personId)));
  if (due.length > 0) await forgetInObjects(deps, due);
}

/**
 * The people a company's object was just given rows of, from a membership read before the call
 * (a scan run, a chunk of the operator's move): those whose membership has ended since are
 * recorded and forgotten as a removal at this moment would be, so nothing the call recorded
 * outlives a membership that ended while it was on its way. One D1 statement (which writes
 * nothing when everyone is still a member) and, only for leavers, one object call. Returns how
 * many were forgotten; a failed object call leaves its rows for the sweep.
 */
export async function forgetLeavers(deps: Deps, companyId: number, personIds: number[]): Promise<number> {
  if (personIds.length === 0) return 0;
  const pairs = [...new Set(personIds)].map((personId) => ({ companyId, personId }));
  const left = await deps.db.all<Forget>(forgetSql(pairs));
  if (left.length === 0) return 0;
  await forgetInObjects(deps, left);
  return left.length;
}

/**
 * Tells the objects to forget: the given rows (right after the commit that wrote them), or the
 * oldest due (the sweep), taken in turns across companies. Each company's people of one removal
 * time in one call; a row goes once its object forgot (a row rewritten since by a later removal
 * stays). A failure is logged; rows the sweep took then wait longer each time (`FORGET_RETRY`)
 * before it takes them again, so objects that do not answer, however many, hold up no other
 * company's. Never throws.
 */
export async function forgetInObjects(
  deps: Deps,
  given?: Forget[],
  now = new Date(),
): Promise<{ forgotten: number; more: boolean }> {
  const { db } = deps;
  let due = given;
  if (due === undefined) {
    try {
      due = await db.all<Forget>(sql`
        select company_id as companyId, person_id as personId, due_at as dueAt from (
          select company_id, person_id, due_at,
                 row_number() over (partition by company_id order by due_at, person_id) as turn
          from ${companyForgets} where retry_at <= ${now.getTime()})
        order by turn, due_at limit ${FORGET_CHUNK}`);
    } catch (err) {
      logError("reading the people company objects must forget failed; the next sweep tries again", err);
      return { forgotten: 0, more: false };
    }
  }
  const calls = new Map<string, Forget[]>();
  for (const row of due) {
    const key = `${row.companyId}:${row.dueAt}`;
    calls.set(key, [...(calls.get(key) ?? []), row]);
  }
  const done: Forget[] = [];
  const failed: Forget[] = [];
  await Promise.all(
    [...calls.values()].map(async (rows) => {
      const { companyId, dueAt } = rows[0]!;
      try {
        await deps.companyObjects.of(companyId).forgetPeople(
          rows.map((row) => row.personId),
          new Date(dueAt),
        );
        done.push(...rows);
      } catch (err) {
        logError("a company object's forgetting failed; the sweep retries", err, { companyId, people: rows.length });
        failed.push(...rows);
      }
    }),
  );
  if (done.length > 0) {
    try {
      // One statement: a row rewritten since by a later removal (another time) stays.
      await db.run(sql`delete from ${companyForgets} where (company_id, person_id, due_at) in (
        select json_extract(value, '$.companyId'), json_extract(value, '$.personId'), json_extract(value, '$.dueAt')
        from json_each(${JSON.stringify(done)}))`);
    } catch (err) {
      logError("recording forgotten people failed; their objects forget them again later", err, {
        people: done.length,
      });
    }
  }
  let pushedBack = false;
  // Rows the sweep took wait before the next try; a failed call right after the commit leaves its rows due.
  if (given === undefined && failed.length > 0) {
    try {
      // One statement: each failed row waits longer than the last time (a row rewritten since stays due).
      await db.run(sql`update ${companyForgets}
        set attempts = attempts + 1,
            retry_at = ${now.getTime()} + ${backoffSql(sql`attempts`, FORGET_RETRY)}
        where (company_id, person_id, due_at) in (
          select json_extract(value, '$.companyId'), json_extract(value, '$.personId'), json_extract(value, '$.dueAt')
          from json_each(${JSON.stringify(failed)}))`);
      pushedBack = true;
    } catch (err) {
      logError("putting back people whose company object did not answer failed; the next sweep tries them", err, {
        people: failed.length,
      });
    }
  }
  // Another chunk is worth taking when this one was full and none of it is due again at once.
  const progressed = done.length > 0 || pushedBack;
  return { forgotten: done.length, more: given === undefined && due.length >= FORGET_CHUNK && progressed };
}
