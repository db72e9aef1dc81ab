import { sql } from "drizzle-orm";
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
    /** When the key became stale (kept by later bumps and backoffs): the age `GET /internal/status` reports. */
    createdAt: timestamp("created_at")
      .notNull()
      .default(sql`0`),
  },
  (t) => [index("index_work_due_idx").on(t.dueAt), index("index_work_created_idx").on(t.createdAt)],
);

/**
 * What the index work last put in KV, per key (a digest of the value, and
 * when): a value equal to the one KV holds is not put again
 * (docs/architecture.md, "Identical values are not rewritten"). Only a
 * digest younger than the record's TTL counts (KV still holds that value);
 * older rows are pruned daily.
 */
export const indexWritten = sqliteTable(
  "index_written",
  {
    key: text("key").primaryKey(),
    digest: text("digest").notNull(),
    writtenAt: timestamp("written_at").notNull(),
  },
  (t) => [index("index_written_written_idx").on(t.writtenAt)],
);

/**
 * Messages a dead-letter queue received that no other row keeps due (a
 * scan-event batch, a background job's continuation): recorded by the DLQ
 * consumer and redriven from here with a growing delay until their work
 * succeeds (docs/architecture.md, "Dead letters"). `messageId` makes a
 * redelivered DLQ message one row.
 */
export const deadLetters = sqliteTable(
  "dead_letters",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    /** The queue the message died on (its DLQ is `<queue>-dlq`). */
    queue: text("queue").notNull(),
    messageId: text("message_id").notNull().unique(),
    body: text("body", { mode: "json" }).$type<unknown>().notNull(),
    /** Redrives tried so far, and the last one's error. */
    attempts: integer("attempts").notNull().default(0),
    lastError: text("last_error"),
    createdAt: timestamp("created_at").notNull(),
    dueAt: timestamp("due_at").notNull(),
  },
  (t) => [index("dead_letters_due_idx").on(t.dueAt)],
);
