import { eq, lt, sql } from "drizzle-orm";
import type { DrizzleSqliteDODatabase } from "drizzle-orm/durable-sqlite";
import type { Refusal } from "./api";
import { MAX_KEYS_PER_DAY } from "../../domain/idempotency";
import { ACTIVITY_BUDGET, MAX_TRUST_REQUESTS_PER_DAY, secondsToNextDay, STRANGERS_BUDGET, utcDay } from "./limits";
import { activityDays, idempotencyDays, receivedDays, trustRequestDays } from "./schema";

/*
 * A person's daily budgets (docs/security.md, "What a stranger can cost"):
 * what they record (message text and the answers kept for their
 * Idempotency-Keys share its bytes), the keys they claim, what strangers send
 * them, and (counted in requests.ts) the trust requests they send; each per
 * UTC day, with the refusal it answers past it. Functions over the object's
 * database, run inside its methods; nothing here awaits.
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

/**
 * Whether one more Idempotency-Key may be claimed today, whose row holds at
 * least `bytes`: under `MAX_KEYS_PER_DAY`, and the day's bytes not spent (a
 * kept answer is charged when it is kept, `charge`); else the refusal.
 */
export function keyFitsToday(db: Db, now: number, bytes: number): Spent | null {
  const day = utcDay(now);
  const keys = db
    .select({ keys: idempotencyDays.keys })
    .from(idempotencyDays)
    .where(eq(idempotencyDays.day, day))
    .get();
  if ((keys?.keys ?? 0) >= MAX_KEYS_PER_DAY) return keysSpent(now);
  const spent = db
    .select({ textBytes: activityDays.textBytes })
    .from(activityDays)
    .where(eq(activityDays.day, day))
    .get();
  return (spent?.textBytes ?? 0) + bytes <= ACTIVITY_BUDGET.textBytes ? null : keptBytesSpent(now);
}

/** Counts a claimed Idempotency-Key against today's `MAX_KEYS_PER_DAY`. */
export function countKey(db: Db, now: number) {
  db.insert(idempotencyDays)
    .values({ day: utcDay(now), keys: 1 })
    .onConflictDoUpdate({ target: idempotencyDays.day, set: { keys: sql`${idempotencyDays.keys} + 1` } })
    .run();
}

/** A refusal past a daily budget. */
type Spent = Extract<Refusal, { status: 429 }>;

const keysSpent = (now: number): Spent => ({
  ok: false,
  status: 429,
  message:
    `a person may use at most ${MAX_KEYS_PER_DAY.toLocaleString("en-US")} \`Idempotency-Key\`s per day (UTC) ` +
    `and you used that many today; retry after midnight UTC (see Retry-After)`,
  retryAfter: secondsToNextDay(now),
});

const keptBytesSpent = (now: number): Spent => ({
  ok: false,
  status: 429,
  message:
    `the answers kept for your \`Idempotency-Key\`s count against your 10 MiB of message text per day (UTC), ` +
    `which is spent; retry after midnight UTC (see Retry-After)`,
  retryAfter: secondsToNextDay(now),
});

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
  for (const counter of [activityDays, receivedDays, trustRequestDays, idempotencyDays]) {
    db.delete(counter)
      .where(lt(counter.day, utcDay(now) - 1))
      .run();
  }
}

export { ACTIVITY_BUDGET, STRANGERS_BUDGET, utcDay } from "./limits";
