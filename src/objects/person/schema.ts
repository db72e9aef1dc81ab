import { sql } from "drizzle-orm";
import { index, integer, sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";
import { activityTypes, partyTypes } from "../../db/schema/buzz";
import { timestamp } from "../../db/schema/columns";

/*
 * The tables inside one person's Durable Object (docs/architecture.md, "Where
 * data lives"): only that person's rows, so no table has a person column.
 * Migrations: drizzle-person/ (npm run db:generate:person).
 */

/**
 * The person's activity feed: the call records they wrote and the chats they
 * sent or received. A chat is a row in both parties' objects with the same
 * id (docs/decisions.md, "Activity ids"). Ids are allocated by the objects
 * (src/objects/person/ids.ts), never by SQLite.
 */
export const feed = sqliteTable(
  "feed",
  {
    id: integer("id").primaryKey(),
    type: text("type", { enum: activityTypes }).notNull(),
    sendableType: text("sendable_type", { enum: partyTypes }).notNull(),
    sendableId: integer("sendable_id").notNull(),
    receivableType: text("receivable_type", { enum: partyTypes }).notNull(),
    receivableId: integer("receivable_id").notNull(),
    callTime: integer("call_time").notNull().default(0),
    message: text("message"),
    messageId: text("message_id"),
    createdAt: timestamp("created_at").notNull(),
  },
  (t) => [
    // The idempotency key of a message: a retry, or the sender's forward arriving twice, finds it.
    uniqueIndex("feed_message_uq").on(t.sendableType, t.sendableId, t.messageId),
    index("feed_created_idx").on(t.createdAt),
  ],
);

/** Calls the telephony provider was told not to put through to this person. */
export const blockedCalls = sqliteTable(
  "blocked_calls",
  {
    id: integer("id").primaryKey(),
    callerId: text("caller_id"),
    countryCode: text("country_code").notNull(),
    phoneNumber: text("phone_number").notNull(),
    createdAt: timestamp("created_at").notNull(),
  },
  (t) => [index("blocked_calls_created_idx").on(t.createdAt)],
);

/** What the person recorded per UTC day: the daily activity budget (docs/security.md). */
export const activityDays = sqliteTable("activity_days", {
  /** Days since 1970-01-01, UTC. */
  day: integer("day").primaryKey(),
  records: integer("records").notNull(),
  /** UTF-8 bytes of message text. */
  textBytes: integer("text_bytes").notNull(),
});

/**
 * Trust requests this person received (docs/decisions.md, "Trust requests"):
 * at most one pending per requester; a decision closes it and keeps it.
 * Ids are made like the feed's (ids.ts); rows moved in from D1 keep theirs.
 */
export const trustRequests = sqliteTable(
  "trust_requests",
  {
    id: integer("id").primaryKey(),
    requesterId: integer("requester_id").notNull(),
    contactReason: text("contact_reason").notNull().default(""),
    status: text("status", { enum: ["pending", "trusted", "untrusted"] }).notNull(),
    decidedAt: timestamp("decided_at"),
    createdAt: timestamp("created_at").notNull(),
    /** When it was last asked (a decision leaves it): the heartbeat's `last_trust_request`. */
    updatedAt: timestamp("updated_at").notNull(),
  },
  (t) => [
    uniqueIndex("trust_requests_pending_uq")
      .on(t.requesterId)
      .where(sql`status = 'pending'`),
    index("trust_requests_requester_idx").on(t.requesterId),
    index("trust_requests_updated_idx").on(t.updatedAt),
  ],
);

/** Trust requests this person sent per UTC day, matched or not (at most 100 a day). */
export const trustRequestDays = sqliteTable("trust_request_days", {
  /** Days since 1970-01-01, UTC. */
  day: integer("day").primaryKey(),
  sent: integer("sent").notNull(),
});
