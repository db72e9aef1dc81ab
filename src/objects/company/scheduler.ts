import { asc, eq, like } from "drizzle-orm";
import type { DrizzleSqliteDODatabase } from "drizzle-orm/durable-sqlite";
import { counters } from "./schema";

/*
 * The object's duties and when each is next due (ms), one `counters` row each (`due:<duty>`): the
 * alarm is set to the earliest (company.ts, the one writer of the alarm), runs every duty that is
 * due, and each duty says when it is due again (null: not until something schedules it).
 */

type Db = DrizzleSqliteDODatabase;

/**
 * - `history`: retention of the finished webhook deliveries (history.ts `prune`);
 * - `events`: events left in the outbox past their time ask the Worker to record them
 *   (the `company-events` background message, services/company-events.ts);
 * - `removals`: pending exposures move to `in_progress` (removals.ts), hourly once one is pending;
 * - `scan-retention`: finished scans, superseded results and long-closed exposures go
 *   (scan-retention.ts).
 */
export const DUTIES = ["history", "events", "removals", "scan-retention"] as const;
export type Duty = (typeof DUTIES)[number];

const PREFIX = "due:";
const nameOf = (duty: Duty) => `${PREFIX}${duty}`;

/** When each scheduled duty is due (ms). */
export function dueTimes(db: Db): Partial<Record<Duty, number>> {
  const rows = db
    .select({ name: counters.name, value: counters.value })
    .from(counters)
    .where(like(counters.name, `${PREFIX}%`))
    .all();
  return Object.fromEntries(rows.map((row) => [row.name.slice(PREFIX.length), row.value]));
}

/** The earliest due time of any duty, or null when none is scheduled. */
export function earliestDue(db: Db): number | null {
  const row = db
    .select({ value: counters.value })
    .from(counters)
    .where(like(counters.name, `${PREFIX}%`))
    .orderBy(asc(counters.value))
    .limit(1)
    .get();
  return row?.value ?? null;
}

/** Sets when `duty` is due next; null: not scheduled. */
export function setDue(db: Db, duty: Duty, at: number | null) {
  if (at === null) {
    db.delete(counters)
      .where(eq(counters.name, nameOf(duty)))
      .run();
    return;
  }
  db.insert(counters)
    .values({ name: nameOf(duty), value: at })
    .onConflictDoUpdate({ target: counters.name, set: { value: at } })
    .run();
}

/** Makes `duty` due at `at` at the latest (an earlier due time stays). */
export function dueBy(db: Db, duty: Duty, at: number) {
  const current = dueTimes(db)[duty];
  if (current === undefined || current > at) setDue(db, duty, at);
}
