import { eq, lt, sql } from "drizzle-orm";
import type { DrizzleSqliteDODatabase } from "drizzle-orm/durable-sqlite";
import type { Refusal } from "./api";
import { ACTIVITY_BUDGET, MAX_TRUST_REQUESTS_PER_DAY, secondsToNextDay, STRANGERS_BUDGET, utcDay } from "./limits";
import { activityDays, receivedDays, trustRequestDays } from "./schema";

/*
 * A person's daily budgets (docs/security.md, "What a stranger can cost"):
 * what they record, what strangers send them, and (counted in requests.ts)
 * the trust requests they send; each per UTC day, with the refusal it
 * answers past it. Functions over the object's database, run inside its
 * methods; nothing here awaits.
 */

type Db = DrizzleSqliteDODatabase;
type Counter = typeof activityDays | typeof receivedDays;

/** The bytes of a message's text, as the budgets count it. */
export const utf8Bytes = (text: string | null | undefined) => (text ? new TextEncoder().encode(text).length : 0);

/** Whether one more record of `bytes` of text fits today's budget of a daily counter (sent or received). */
export function fitsToday(
  db: Db,
  table: Counter,
  budget: { records: number; textBytes: number },
  day: number,
  bytes: number,
): boolean {
  const spent = db
    .select({ records: table.records, textBytes: table.textBytes })
    .from(table)
    .where(eq(table.day, day))
    .get();
  return (spent?.records ?? 0) + 1 <= budget.records && (spent?.textBytes ?? 0) + bytes <= budget.textBytes;
}

/** Adds to (or, negative, gives back) a day of a daily counter, never below zero. */
export function charge(db: Db, table: Counter, day: number, records: number, textBytes: number) {
  db.insert(table)
    .values({ day, records: Math.max(records, 0), textBytes: Math.max(textBytes, 0) })
    .onConflictDoUpdate({
      target: table.day,
      set: {
        records: sql`max(${table.records} + ${records}, 0)`,
        textBytes: sql`max(${table.textBytes} + ${textBytes}, 0)`,
      },
    })
    .run();
}

/** The refusal of a record past the person's own daily budget. */
export const activitySpent = (now: number): Refusal => ({
  ok: false,
  status: 429,
  message:
    `a person may record at most ${ACTIVITY_BUDGET.records} activities and 10 MiB of message text per day (UTC), ` +
    `and this one would pass today's budget; retry after midnight UTC (see Retry-After)`,
  retryAfter: secondsToNextDay(now),
});

/** The refusal of a stranger's chat to person `me`, past the budget strangers share. */
export const strangersSpent = (me: number, now: number): Refusal => ({
  ok: false,
  status: 429,
  message:
    `person ${me} may receive at most ${STRANGERS_BUDGET.records.toLocaleString("en-US")} messages and 10 MiB of ` +
    `message text per day (UTC) from people who do not know them, all together, and has received that much ` +
    `today; retry after midnight UTC (see Retry-After), or ask them for trust`,
  retryAfter: secondsToNextDay(now),
});

/** The refusal of a trust request past the day's `MAX_TRUST_REQUESTS_PER_DAY`. */
export const requestsSpent = (retryAfter: number): Refusal => ({
  ok: false,
  status: 429,
  message: `a person may send at most ${MAX_TRUST_REQUESTS_PER_DAY} trust requests per day (UTC) and you sent ${MAX_TRUST_REQUESTS_PER_DAY} today; retry after midnight UTC (see Retry-After)`,
  retryAfter,
});

/** The alarm's care of the daily counters: today's and yesterday's are kept. */
export function pruneDays(db: Db, now: number) {
  for (const counter of [activityDays, receivedDays, trustRequestDays]) {
    db.delete(counter)
      .where(lt(counter.day, utcDay(now) - 1))
      .run();
  }
}

export { ACTIVITY_BUDGET, STRANGERS_BUDGET, utcDay } from "./limits";
