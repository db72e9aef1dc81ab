import { sql, type SQL } from "drizzle-orm";
import type { Db } from "./client";
import { errorText } from "./errors";
import { batchGuards } from "./schema";

/**
 * Conditions that must hold after a batch, checked inside it. D1 has no
 * BEGIN, and SQLite's RAISE() works only in triggers, so a command's checks
 * before its batch can race with another request's batch (two requests both
 * see the last seat free). The batch therefore ends with a guard statement:
 * when `violated` is true after the batch's writes, it inserts NULL into the
 * guard's NOT NULL column of `batch_guards`, and D1 rolls the whole batch
 * back (https://developers.cloudflare.com/d1/worker-api/d1-database/#batch).
 * `failedGuard` reads which guard refused from the error.
 */
export type Guard = keyof typeof COLUMNS;

const COLUMNS = {
  seats: "seats",
  settingsWriter: "settings_writer",
  contactQuota: "contact_quota",
  employeeQuota: "employee_quota",
  codeSpent: "code_spent",
} as const satisfies Record<keyof typeof batchGuards.$inferInsert, string>;

const GUARDS = Object.keys(COLUMNS) as Guard[];

/** The statement that rolls its batch back when `violated` holds after the writes before it. */
export function guardStatement(db: Db, guard: Guard, violated: SQL) {
  const values = sql.join(
    GUARDS.map((name) => (name === guard ? sql`null` : sql`0`)),
    sql`, `,
  );
  // Built with the query builder: drizzle's D1 batch cannot bind a raw `db.run(sql…)`.
  return db.insert(batchGuards).select(sql`select ${values} where ${violated}`);
}

/** Which guard rolled a batch back, or null for any other error. */
export function failedGuard(err: unknown): Guard | null {
  const text = errorText(err);
  return GUARDS.find((guard) => text.includes(`NOT NULL constraint failed: batch_guards.${COLUMNS[guard]}`)) ?? null;
}
