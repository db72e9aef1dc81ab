import { index, integer, sqliteTable, text } from "drizzle-orm/sqlite-core";
import { companies } from "./companies";
import { cascadeRef, createdAt, flag, id, timestamp, updatedAt } from "./columns";

export const webhooks = sqliteTable(
  "webhooks",
  {
    id: id(),
    companyId: cascadeRef("company_id", () => companies.id),
    endpoint: text("endpoint").notNull(),
    event: text("event").notNull(),
    active: flag("active").notNull().default(true),
    secret: text("secret").notNull(),
    /** The secret replaced by the last rotation; deliveries are signed with it too until it expires (24 h). */
    previousSecret: text("previous_secret"),
    previousSecretExpiresAt: timestamp("previous_secret_expires_at"),
    /** Why the service deactivated the webhook (410, 5 days of failures); null when active or switched off by PATCH. */
    disabledReason: text("disabled_reason"),
    /** The first failed attempt since the last success; null while the endpoint answers 2xx. */
    failingSince: timestamp("failing_since"),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (t) => [index("webhooks_company_event_idx").on(t.companyId, t.event)],
);

/**
 * One delivery of one event to one webhook: a webhook history entry (OpenAPI
 * component `WebhookHistory`; docs/webhooks.md, "History, attempts, test and resend").
 * Its uuid is the Standard Webhooks `webhook-id`. Kept when the webhook is
 * deleted (the company's history stays readable).
 */
export const webhookDeliveries = sqliteTable(
  "webhook_deliveries",
  {
    id: text("id").primaryKey(),
    companyId: cascadeRef("company_id", () => companies.id),
    webhookId: integer("webhook_id").references(() => webhooks.id, { onDelete: "set null" }),
    event: text("event").notNull(),
    payload: text("payload", { mode: "json" }).$type<unknown>().notNull(),
    /**
     * False while `payload` is only `{"id": n}` of a person whose Person the
     * event carries: the command that wrote the row fills it right after its
     * commit, and the delivery renders it if that did not happen.
     */
    rendered: flag("rendered").notNull().default(true),
    status: text("status", { enum: ["pending", "dispatched", "success", "failed"] })
      .notNull()
      .default("pending"),
    result: text("result").notNull().default(""),
    attempts: integer("attempts").notNull().default(0),
    deliveredAt: timestamp("delivered_at"),
    /**
     * When its next attempt is due (ms): when it was recorded (or resent), then after each failed attempt
     * the time of the retry. A message for it that comes earlier is a duplicate of the chain that will
     * make that attempt (the outbox sweep's, or the queue's own) and sends nothing; one past it by five
     * minutes was lost, and the outbox sweep sends another.
     */
    dueAt: integer("due_at").notNull().default(0),
    /**
     * A finished delivery's place in the hand-over's order (ms): when it finished, then when its company's
     * object last did not take it (0: finished before this column was kept). A refused row waits behind
     * what finished before the refusal, ahead of what finishes after, while `updated_at` stays the time
     * it finished (its retention, and the object's).
     */
    handoverAfter: integer("handover_after").notNull().default(0),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (t) => [
    index("webhook_deliveries_company_created_idx").on(t.companyId, t.createdAt),
    index("webhook_deliveries_status_idx").on(t.status, t.updatedAt),
    index("webhook_deliveries_handover_idx").on(t.status, t.handoverAfter, t.updatedAt),
    index("webhook_deliveries_due_idx").on(t.status, t.dueAt),
  ],
);

/**
 * Every POST made for a history entry (and every attempt refused before
 * one, such as an endpoint no longer allowed): `GET /webhooks/history/{id}`
 * lists them oldest first. They go with their entry.
 */
export const webhookAttempts = sqliteTable(
  "webhook_attempts",
  {
    id: id(),
    deliveryId: text("delivery_id")
      .notNull()
      .references(() => webhookDeliveries.id, { onDelete: "cascade" }),
    at: timestamp("at").notNull(),
    /** The HTTP status as digits, or `timeout`, `connection failed`, `invalid response`, `invalid endpoint`. */
    result: text("result").notNull(),
    durationMs: integer("duration_ms").notNull(),
  },
  (t) => [index("webhook_attempts_delivery_idx").on(t.deliveryId, t.id)],
);
