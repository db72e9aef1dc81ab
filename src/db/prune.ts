import { and, lt, sql, type SQL } from "drizzle-orm";
import type { SQLiteColumn, SQLiteTable } from "drizzle-orm/sqlite-core";
import type { Db } from "./client";

/** Rows one statement deletes: a few ms of D1 time each, far inside its 30 s per query. */
export const PRUNE_CHUNK = 1_000;
/** Statements one call may run; a daily run sums its rules' budgets under ~500 (1,000 per invocation). */
export const PRUNE_MAX_STATEMENTS = 100;

export type PruneSpec = {
  table: SQLiteTable;
  /** The age column; it must lead an index, so finding due rows never scans the table. */
  column: SQLiteColumn;
  /** Rows whose `column` is before this go. */
  cutoff: Date | number;
  /** Further condition a due row must meet (e.g. a finished delivery). */
  where?: SQL;
  chunk?: number;
  maxStatements?: number;
};

export type PruneResult = {
  pruned: number;
  statements: number;
  /** The budget ran out while statements still deleted full chunks: due rows may remain. */
  more: boolean;
};

/**
 * Deletes the rows of `table` older than `cutoff` in chunks of `chunk` rows,
 * one statement per chunk, at most `maxStatements` statements: a job that
 * stays inside one invocation's limits (1,000 D1 statements,
 * https://developers.cloudflare.com/d1/platform/limits/) whatever the
 * backlog, and resumes where it stopped on the next call, since what is left
 * is simply still due. The retention rules of docs/capacity.md use it.
 *
 * No ORDER BY: the subquery walks the age column's index and stops after
 * `chunk` matches; sorting would read every due row first.
 */
export async function pruneOlderThan(db: Db, spec: PruneSpec): Promise<PruneResult> {
  const { table, column, cutoff, where, chunk = PRUNE_CHUNK, maxStatements = PRUNE_MAX_STATEMENTS } = spec;
  const due = and(lt(column, cutoff), where);
  let pruned = 0;
  let statements = 0;
  while (statements < maxStatements) {
    const result = await db.run(
      sql`delete from ${table} where rowid in (select rowid from ${table} where ${due} limit ${chunk})`,
    );
    statements++;
    const changes = result.meta.changes ?? 0;
    pruned += changes;
    if (changes < chunk) return { pruned, statements, more: false };
  }
  return { pruned, statements, more: true };
}
