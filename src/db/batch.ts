import { getTableColumns } from "drizzle-orm";
import type { BatchItem, BatchResponse } from "drizzle-orm/batch";
import type { SQLiteTable } from "drizzle-orm/sqlite-core";
import type { Db } from "./client";

/**
 * D1 allows at most 100 bound parameters per statement
 * (https://developers.cloudflare.com/d1/platform/limits/), so multi-row
 * inserts are split into statements of at most `100 / columns` rows. The
 * statements go into one `db.batch`, which D1 runs atomically.
 */
export const D1_MAX_PARAMS = 100;

export function insertChunks<T extends SQLiteTable>(db: Db, table: T, rows: T["$inferInsert"][]) {
  const perRow = Object.keys(getTableColumns(table)).length;
  const size = Math.max(1, Math.floor(D1_MAX_PARAMS / perRow));
  const statements = [];
  for (let i = 0; i < rows.length; i += size) {
    statements.push(
      db
        .insert(table)
        .values(rows.slice(i, i + size))
        .onConflictDoNothing(),
    );
  }
  return statements;
}

/**
 * Reads that may or may not be needed, run as one `db.batch` (one D1 round
 * trip): `add` takes some statements and returns how to pick their results
 * out of the batch's; `run` runs whatever was added (nothing: no round trip).
 */
export class ReadBatch {
  readonly #items: BatchItem<"sqlite">[] = [];

  add<T extends readonly BatchItem<"sqlite">[]>(statements: T): (results: unknown[]) => BatchResponse<T> {
    const from = this.#items.push(...statements) - statements.length;
    return (results) => results.slice(from, from + statements.length) as BatchResponse<T>;
  }

  async run(db: Db): Promise<unknown[]> {
    const [first, ...rest] = this.#items;
    return first ? db.batch([first, ...rest]) : [];
  }
}
