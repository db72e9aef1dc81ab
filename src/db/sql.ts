import { sql, type SQL } from "drizzle-orm";
import type { BatchItem } from "drizzle-orm/batch";
import type { SQLiteColumn } from "drizzle-orm/sqlite-core";
import { doublings, type Backoff } from "../lib/backoff";
import type { Db } from "./client";

/**
 * `column in (…)` over a list of any length, bound as one JSON parameter:
 * D1 binds at most 100 parameters per statement
 * (https://developers.cloudflare.com/d1/platform/limits/).
 */
export const inList = (column: SQLiteColumn | SQL, values: readonly (number | string)[]): SQL =>
  sql`${column} in (select value from json_each(${JSON.stringify(values)}))`;

/**
 * The `id`s of the first `limit` rows of several ranges, merged by `order`: each range is a SELECT with
 * its own ORDER BY and LIMIT that an index serves (one per status, say), selecting `id` and what
 * `order` names, so no statement sorts the whole set the ranges come from.
 */
export const firstOfRanges = (ranges: SQL[], order: SQL, limit: number): SQL =>
  sql`select id from (${sql.join(
    ranges.map((range) => sql`select * from (${range})`),
    sql` union all `,
  )}) order by ${order} limit ${limit}`;

/**
 * A raw SQL statement returning rows that can go into `db.batch`. drizzle's
 * `db.all(sql)` runs alone but cannot be batched on D1 when it binds
 * parameters (its raw query has no prepared statement), and commands need
 * `insert … select … returning` in their batch.
 */
export function batchableAll<T>(db: Db, query: SQL): BatchItem<"sqlite"> {
  const raw = db.all<T>(query);
  const built = raw.getQuery();
  const prepared = {
    stmt: db.$client.prepare(built.sql),
    getQuery: () => built,
    mapResult: (result: D1Result<T>) => result.results,
  };
  return Object.assign(raw, { _prepare: () => prepared }) as unknown as BatchItem<"sqlite">;
}

/**
 * `backoff` (lib/backoff.ts) in SQL, for a row's next due time: `base`
 * doubled per `attempt` (an integer expression), at most `cap`.
 */
export function backoffSql(attempt: SQL, policy: Backoff): SQL {
  const { base, cap } = policy;
  if (![base, cap].every(Number.isSafeInteger)) throw new Error("a SQL backoff takes integers");
  return sql`min(${sql.raw(String(cap))}, ${sql.raw(String(base))} * (1 << min(${attempt}, ${sql.raw(String(doublings(policy)))})))`;
}
