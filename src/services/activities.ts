import { and, asc, eq, gt, like, or, sql, type SQL } from "drizzle-orm";
import { alias } from "drizzle-orm/sqlite-core";
import type { Db } from "../db/client";
import { failedGuard, guardStatement } from "../db/guard";
import { pruneOlderThan, type PruneSpec } from "../db/prune";
import { activities, activityDays, activityTypes, blockedCalls, companies, partyTypes, people } from "../db/schema";
import { iso } from "../lib/time";
import { conflict, tooManyRequests } from "../lib/errors";
import { knowsMember, knowsPerson } from "./acquaintance";

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

/** What a person may record per UTC day (docs/decisions.md, "Activity"): records, and bytes of message text. */
export const ACTIVITY_BUDGET = { records: 1_000, textBytes: 10 * 1024 * 1024 } as const;
const DAY_MS = 24 * 3600 * 1000;
const utf8Bytes = (text: string | undefined) => (text ? new TextEncoder().encode(text).length : 0);

/**
 * Stores an activity, idempotently on (sender, `message_id`) (docs/decisions.md):
 * a retried POST finds the first record and creates nothing (and is not
 * charged again). A new record is charged to its recorder's day in the same
 * batch, and a guard rolls the batch back when the day's budget would be
 * passed: 429 until midnight UTC, nothing written.
 */
export async function recordActivity(db: Db, input: ActivityInput) {
  const retried = input.message_id ? await sameMessage(db, input) : null;
  if (retried) return retried;

  const now = new Date();
  const day = Math.floor(now.getTime() / DAY_MS);
  const recorderId = input[`${recordedBy(input.type)}_id`];
  const bytes = utf8Bytes(input.message);
  const today = and(eq(activityDays.day, day), eq(activityDays.personId, recorderId));
  let rows: ActivityRow[];
  try {
    [, rows] = await db.batch([
      db
        .insert(activityDays)
        .values({ day, personId: recorderId, records: 1, textBytes: bytes })
        .onConflictDoUpdate({
          target: [activityDays.day, activityDays.personId],
          set: { records: sql`${activityDays.records} + 1`, textBytes: sql`${activityDays.textBytes} + ${bytes}` },
        }),
      db
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
          createdAt: now,
        })
        .onConflictDoNothing()
        .returning(),
      guardStatement(
        db,
        "activityBudget",
        sql`exists (select 1 from ${activityDays} where ${today} and (${activityDays.records} > ${ACTIVITY_BUDGET.records} or ${activityDays.textBytes} > ${ACTIVITY_BUDGET.textBytes}))`,
      ),
    ]);
  } catch (err) {
    if (failedGuard(err) !== "activityBudget") throw err;
    const secondsToNextDay = Math.ceil(((day + 1) * DAY_MS - now.getTime()) / 1000);
    throw tooManyRequests(
      `a person may record at most ${ACTIVITY_BUDGET.records} activities and 10 MiB of message text per day (UTC), ` +
        `and this one would pass today's budget; retry after midnight UTC (see Retry-After)`,
      secondsToNextDay,
    );
  }
  if (rows[0]) return toCreated(rows[0]);
  // A concurrent request with the same message id won the insert (this one was charged once more).
  const first = await sameMessage(db, input);
  if (!first) throw conflict(`\`message_id\` ${input.message_id} is already used by another of your activities`);
  return first;
}

/**
 * The sender's earlier record with this `message_id`, when it is the same
 * activity (a retry); a different activity under the id → 409; none → null.
 */
async function sameMessage(db: Db, input: ActivityInput) {
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
  if (!first) return null;
  const same =
    first.type === input.type &&
    first.receivableType === input.receivable_type &&
    first.receivableId === input.receivable_id;
  if (!same) throw conflict(`\`message_id\` ${input.message_id} is already used by another of your activities`);
  return toCreated(first);
}

/** Drops the budget counts of days before yesterday (the daily cron; bounded like every prune). */
export async function pruneActivityDays(db: Db, now: Date, limits: Pick<PruneSpec, "chunk" | "maxStatements"> = {}) {
  const today = Math.floor(now.getTime() / DAY_MS);
  return pruneOlderThan(db, { table: activityDays, column: activityDays.day, cutoff: today - 1, ...limits });
}

const sendingPerson = alias(people, "sending_person");
const receivingPerson = alias(people, "receiving_person");
const sendingCompany = alias(companies, "sending_company");
const receivingCompany = alias(companies, "receiving_company");

const READ_TYPES = { person: "AppModelsPerson", company: "AppModelsCompany" } as const;

type Party =
  | { id: number; first_name: string | null; middle_name: string | null; last_name: string | null }
  | { id: number; name: string | null }
  | null;

/** Whether a party of an activity (its type and id columns) knows the reader: only then is it named. */
const partyKnows = (type: SQL, id: SQL, readerId: number) =>
  sql<number>`case when ${type} = 'person' then ${knowsPerson(id, readerId)} else ${knowsMember(id, readerId)} end`;

/** The party as the reader may see it: its id always, its names only when it knows the reader. */
function named(party: Party, known: number): Party {
  if (party === null || known) return party;
  return "name" in party
    ? { id: party.id, name: null }
    : { id: party.id, first_name: null, middle_name: null, last_name: null };
}

/**
 * Activities involving `personId` with an id above `afterId`, oldest first,
 * at most `limit` (docs/decisions.md); parties read as `AppModelsPerson` /
 * `AppModelsCompany`, named only when they know the reader (docs/security.md:
 * writing a record that names an id reveals nothing about who that is). A
 * party deleted since reads as null.
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
      sendableKnows: partyKnows(sql`${activities.sendableType}`, sql`${activities.sendableId}`, personId),
      receivableKnows: partyKnows(sql`${activities.receivableType}`, sql`${activities.receivableId}`, personId),
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
    const sendable = named(a.sendableType === "person" ? row.sendingPerson : row.sendingCompany, row.sendableKnows);
    const receivable = named(
      a.receivableType === "person" ? row.receivingPerson : row.receivingCompany,
      row.receivableKnows,
    );
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
