import { index, integer, sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";
import { cascadeRef, createdAt, id, timestamp } from "./columns";
import { people } from "./people";

/**
 * Pool of secure numbers. The unique indexes on `e164` and `person_id` are
 * what make assignment safe under concurrency: one number per person, one
 * person per number (docs/decisions.md).
 */
export const secureNumbers = sqliteTable(
  "secure_numbers",
  {
    id: id(),
    e164: text("e164").notNull(),
    countryCode: text("country_code").notNull(),
    number: text("number").notNull(),
    personId: integer("person_id").references(() => people.id, { onDelete: "set null" }),
    assignedAt: timestamp("assigned_at"),
    /**
     * When the last holder's account was removed. A released number rests in
     * quarantine before it is assigned again: other people's contacts and
     * trust still name it, and a new holder must not inherit that trust.
     */
    releasedAt: timestamp("released_at"),
    createdAt: createdAt(),
  },
  (t) => [uniqueIndex("secure_numbers_e164_uq").on(t.e164), uniqueIndex("secure_numbers_person_uq").on(t.personId)],
);

export const blockedCalls = sqliteTable(
  "blocked_calls",
  {
    id: id(),
    personId: cascadeRef("person_id", () => people.id),
    callerId: text("caller_id"),
    countryCode: text("country_code").notNull(),
    phoneNumber: text("phone_number").notNull(),
    createdAt: createdAt(),
  },
  // created_at alone: the daily retention finds rows past 90 days without a scan (docs/capacity.md).
  (t) => [
    index("blocked_calls_person_created_idx").on(t.personId, t.createdAt),
    index("blocked_calls_created_idx").on(t.createdAt),
  ],
);

// The activity and party types are the domain's (src/domain/activity.ts).
import { activityTypes, partyTypes } from "../../domain/activity";
export { activityTypes, partyTypes } from "../../domain/activity";

/**
 * Chat and call records. Parties are polymorphic (person or company), so no
 * foreign keys; the indexes serve "newer than id, where I am sender or
 * receiver", and the unique index makes a retried POST idempotent.
 */
export const activities = sqliteTable(
  "activities",
  {
    id: id(),
    type: text("type", { enum: activityTypes }).notNull(),
    sendableType: text("sendable_type", { enum: partyTypes }).notNull(),
    sendableId: integer("sendable_id").notNull(),
    receivableType: text("receivable_type", { enum: partyTypes }).notNull(),
    receivableId: integer("receivable_id").notNull(),
    callTime: integer("call_time").notNull().default(0),
    message: text("message"),
    messageId: text("message_id"),
    createdAt: createdAt(),
  },
  (t) => [
    index("activities_sendable_idx").on(t.sendableType, t.sendableId, t.id),
    index("activities_receivable_idx").on(t.receivableType, t.receivableId, t.id),
    uniqueIndex("activities_message_uq").on(t.sendableType, t.sendableId, t.messageId),
    // The daily retention finds records past 365 days without a scan (docs/capacity.md).
    index("activities_created_idx").on(t.createdAt),
  ],
);
