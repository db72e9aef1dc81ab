import { index, integer, sqliteTable, text } from "drizzle-orm/sqlite-core";
import { timestamp } from "./columns";

/**
 * Trust-index work: the KV keys a committed write made stale. A command
 * inserts (or bumps) a row in the same D1 batch as its change, so a change
 * can never lose its index update; the row goes once KV accepted the value
 * read after it (docs/architecture.md).
 *
 * - `version` grows with every write touching the key: an applier that read
 *   D1 at version 3 deletes the row only if it is still at 3, so a write that
 *   came in meanwhile is applied again.
 * - `leaseId`/`leaseUntil`: one applier per key at a time, so an older value
 *   can never be put after a newer one.
 */
export const indexWork = sqliteTable(
  "index_work",
  {
    key: text("key").primaryKey(),
    version: integer("version").notNull().default(1),
    leaseId: text("lease_id"),
    leaseUntil: timestamp("lease_until"),
    attempts: integer("attempts").notNull().default(0),
    dueAt: timestamp("due_at").notNull(),
  },
  (t) => [index("index_work_due_idx").on(t.dueAt)],
);
