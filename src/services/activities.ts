import { and, asc, eq, gt, like, or } from "drizzle-orm";
import { alias } from "drizzle-orm/sqlite-core";
import type { Db } from "../db/client";
import { activities, activityTypes, blockedCalls, companies, partyTypes, people } from "../db/schema";
import { iso } from "../lib/time";
import { conflict } from "../lib/errors";

export type ActivityType = (typeof activityTypes)[number];
export type PartyType = (typeof partyTypes)[number];

export type ActivityInput = {
  type: ActivityType;
  sendable_type: PartyType;
  sendable_id: number;
  receivable_type: PartyType;
  receivable_id: number;
  call_time: number;
  message?: string;
  message_id?: string;
};

type ActivityRow = typeof activities.$inferSelect;

/** The created activity as the POST answers it [seed 2.5]: party types as written. */
const toCreated = (row: ActivityRow) => ({
  id: row.id,
  type: row.type,
  sendable_type: row.sendableType,
  sendable_id: row.sendableId,
  receivable_type: row.receivableType,
  receivable_id: row.receivableId,
  call_time: row.callTime,
  message: row.message,
  message_id: row.messageId,
  created_at: iso(row.createdAt)!,
});

/** `personId` takes part in the activity as sender or receiver. */
const involves = (personId: number) =>
  or(
    and(eq(activities.sendableType, "person"), eq(activities.sendableId, personId)),
    and(eq(activities.receivableType, "person"), eq(activities.receivableId, personId)),
  );

/**
 * Who records an activity, and whose log a call record is (docs/decisions.md,
 * "Activity"): a message or an outgoing call is recorded by its sender, an
 * incoming call by its receiver.
 */
export const recordedBy = (type: ActivityType): "sendable" | "receivable" =>
  type.startsWith("incoming_") ? "receivable" : "sendable";

/**
 * The activities `personId` sees: messages they sent or received, and the call
 * records they wrote themselves. A call record is its recorder's own log, so
 * nobody can place a record in another person's feed except by a message.
 */
const visibleTo = (personId: number) =>
  or(
    and(like(activities.type, "chat_%"), involves(personId)),
    and(
      like(activities.type, "outgoing_%"),
      eq(activities.sendableType, "person"),
      eq(activities.sendableId, personId),
    ),
    and(
      like(activities.type, "incoming_%"),
      eq(activities.receivableType, "person"),
      eq(activities.receivableId, personId),
    ),
  );

/**
 * Stores an activity, idempotently on (sender, `message_id`) (docs/decisions.md):
 * a retried POST finds the first record and creates nothing.
 */
export async function recordActivity(db: Db, input: ActivityInput) {
  const inserted = await db
    .insert(activities)
    .values({
      type: input.type,
      sendableType: input.sendable_type,
      sendableId: input.sendable_id,
      receivableType: input.receivable_type,
      receivableId: input.receivable_id,
      callTime: input.call_time,
      message: input.message ?? null,
      messageId: input.message_id ?? null,
      createdAt: new Date(),
    })
    .onConflictDoNothing()
    .returning()
    .get();
  if (inserted) return toCreated(inserted);

  const first = await db
    .select()
    .from(activities)
    .where(
      and(
        eq(activities.sendableType, input.sendable_type),
        eq(activities.sendableId, input.sendable_id),
        eq(activities.messageId, input.message_id ?? ""),
      ),
    )
    .get();
  // Only a unique message id can conflict, so the first record exists. It is
  // a retry only when it is the same activity; otherwise the id is taken.
  const same =
    first!.type === input.type &&
    first!.receivableType === input.receivable_type &&
    first!.receivableId === input.receivable_id;
  if (!same) throw conflict(`\`message_id\` ${input.message_id} is already used by another of your activities`);
  return toCreated(first!);
}

const sendingPerson = alias(people, "sending_person");
const receivingPerson = alias(people, "receiving_person");
const sendingCompany = alias(companies, "sending_company");
const receivingCompany = alias(companies, "receiving_company");

const READ_TYPES = { person: "AppModelsPerson", company: "AppModelsCompany" } as const;

type Party =
  | { id: number; first_name: string; middle_name: string | null; last_name: string }
  | { id: number; name: string }
  | null;

/**
 * Activities involving `personId` with an id above `afterId`, oldest first,
 * at most `limit` (docs/decisions.md); parties read as `AppModelsPerson` /
 * `AppModelsCompany` with their names. A party deleted since reads as null.
 */
export async function activitiesAfter(db: Db, personId: number, afterId: number, limit: number) {
  const rows = await db
    .select({
      activity: activities,
      sendingPerson: {
        id: sendingPerson.id,
        first_name: sendingPerson.firstName,
        middle_name: sendingPerson.middleName,
        last_name: sendingPerson.lastName,
      },
      receivingPerson: {
        id: receivingPerson.id,
        first_name: receivingPerson.firstName,
        middle_name: receivingPerson.middleName,
        last_name: receivingPerson.lastName,
      },
      sendingCompany: { id: sendingCompany.id, name: sendingCompany.name },
      receivingCompany: { id: receivingCompany.id, name: receivingCompany.name },
    })
    .from(activities)
    .leftJoin(sendingPerson, and(eq(activities.sendableType, "person"), eq(sendingPerson.id, activities.sendableId)))
    .leftJoin(
      receivingPerson,
      and(eq(activities.receivableType, "person"), eq(receivingPerson.id, activities.receivableId)),
    )
    .leftJoin(sendingCompany, and(eq(activities.sendableType, "company"), eq(sendingCompany.id, activities.sendableId)))
    .leftJoin(
      receivingCompany,
      and(eq(activities.receivableType, "company"), eq(receivingCompany.id, activities.receivableId)),
    )
    .where(and(gt(activities.id, afterId), visibleTo(personId)))
    .orderBy(asc(activities.id))
    .limit(limit)
    .all();

  return rows.map((row) => {
    const a = row.activity;
    const sendable: Party = a.sendableType === "person" ? row.sendingPerson : row.sendingCompany;
    const receivable: Party = a.receivableType === "person" ? row.receivingPerson : row.receivingCompany;
    return {
      id: a.id,
      type: a.type,
      sendable_type: READ_TYPES[a.sendableType],
      sendable_id: a.sendableId,
      receivable_type: READ_TYPES[a.receivableType],
      receivable_id: a.receivableId,
      call_time: a.callTime,
      message: a.message,
      message_id: a.messageId,
      created_at: iso(a.createdAt)!,
      sendable,
      receivable,
    };
  });
}

/** Development only: wipes the person's activity and blocked calls (docs/decisions.md). */
export async function clearHistory(db: Db, personId: number) {
  await db.batch([
    db.delete(activities).where(involves(personId)),
    db.delete(blockedCalls).where(eq(blockedCalls.personId, personId)),
  ]);
}
