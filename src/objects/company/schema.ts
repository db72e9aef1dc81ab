import { index, integer, sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";
import { timestamp } from "../../db/schema/columns";

/*
 * The tables inside one company's Durable Object (docs/architecture.md, "The
 * Company object"): only that company's rows, so no table has a company
 * column. Migrations: drizzle-company/ (npm run db:generate:company).
 */

/**
 * The company's finished webhook deliveries: a history entry once it
 * succeeded or failed for good. D1 keeps a delivery while it is on its way
 * (pending, or waiting for a retry: the outbox the command wrote in its own
 * batch); once finished it is handed here and leaves D1
 * (services/webhook-delivery/archive.ts). `seq` is the row's place in D1
 * (its rowid), so entries created in the same millisecond keep D1's order.
 */
export const deliveries = sqliteTable(
  "deliveries",
  {
    id: text("id").primaryKey(),
    seq: integer("seq").notNull(),
    webhookId: integer("webhook_id"),
    event: text("event").notNull(),
    /** The body's JSON text. */
    payload: text("payload").notNull(),
    status: text("status", { enum: ["success", "failed"] }).notNull(),
    result: text("result").notNull(),
    attempts: integer("attempts").notNull(),
    deliveredAt: timestamp("delivered_at"),
    createdAt: timestamp("created_at").notNull(),
    /** When it finished (D1's `updated_at` at the hand-over): retention counts from here. */
    finishedAt: timestamp("finished_at").notNull(),
    /** 1 while a resend has it on its way again in D1: D1's row answers for it until it finishes again. */
    resent: integer("resent").notNull().default(0),
  },
  (t) => [
    index("deliveries_created_idx").on(t.createdAt, t.seq),
    index("deliveries_finished_idx").on(t.status, t.finishedAt),
  ],
);

/** Every POST made for a history entry, as D1 recorded it; handed over with its entry. */
export const attempts = sqliteTable(
  "attempts",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    deliveryId: text("delivery_id")
      .notNull()
      .references(() => deliveries.id, { onDelete: "cascade" }),
    at: timestamp("at").notNull(),
    result: text("result").notNull(),
    durationMs: integer("duration_ms").notNull(),
  },
  // A hand-over repeated (the consumer's, then the sweep's) adds no attempt twice.
  (t) => [uniqueIndex("attempts_delivery_at_uq").on(t.deliveryId, t.at, t.result, t.durationMs)],
);
