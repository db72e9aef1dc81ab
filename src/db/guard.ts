import { sql, type SQL } from "drizzle-orm";
import type { BatchItem } from "drizzle-orm/batch";
import type { Db } from "./client";
import { batchGuards } from "./schema";

/**
 * Conditions that must hold after a batch, checked inside it. D1 has no
 * BEGIN, and SQLite's RAISE() works only in triggers, so a command's checks
 * before its batch can race with another request's batch (two requests both
 * see the last seat free). The batch therefore ends with a guard statement:
 * when `violated` is true after the batch's writes, it inserts NULL into the
 * guard's NOT NULL column of `batch_guards`, and D1 rolls the whole batch
 * back (https://developers.cloudflare.com/d1/worker-api/d1-database/#batch).
 *
 * Which guard refused is never read from the error. D1 reports a rolled-back
 * batch only as an error's text (no statement index, no code), so each guard
 * statement carries its `check`: the check the command made before its
 * batch, which throws the guard's refusal (the one `ApiError`) when its
 * condition fails. A rolled-back batch asks its guards' checks again, in the
 * order of `GUARDS` (services/outbox.ts, `WriteBatch.commit`): the state it
 * lost to is committed by then, so the first check that throws names the
 * guard and answers with the refusal the check before the batch would have
 * given. When none throws (the batch failed for another reason, or the
 * state moved back in between), the batch's own error goes on: nothing but
 * a check ever turns a failure into a refusal.
 */
export type Guard = keyof typeof COLUMNS;

/** The columns of `batch_guards`, one per guard, in the table's order (the guard statement's values follow it). */
const COLUMNS = {
  seats: "seats",
  settingsWriter: "settings_writer",
  contactQuota: "contact_quota",
  employeeQuota: "employee_quota",
  codeSpent: "code_spent",
  standing: "standing",
  personWide: "person_wide",
} as const satisfies Record<keyof typeof batchGuards.$inferInsert, string>;

/** The guards in the order a rolled-back batch asks their checks (the first refusal wins). */
export const GUARDS: readonly Guard[] = [
  "standing",
  "personWide",
  "employeeQuota",
  "seats",
  "settingsWriter",
  "codeSpent",
  "contactQuota",
];

/** A check that throws the guard's refusal (an `ApiError`) when its condition fails now, else returns. */
export type GuardCheck = () => Promise<void>;

/** A guard's statement for a command's batch, with the check that explains a rollback (above). */
export type GuardStatement = { guard: Guard; statement: BatchItem<"sqlite">; check: GuardCheck };

/** The statement that rolls its batch back when `violated` holds after the writes before it. */
export function guardStatement(db: Db, guard: Guard, violated: SQL, check: GuardCheck): GuardStatement {
  const values = sql.join(
    (Object.keys(COLUMNS) as Guard[]).map((name) => (name === guard ? sql`null` : sql`0`)),
    sql`, `,
  );
  // Built with the query builder: drizzle's D1 batch cannot bind a raw `db.run(sql…)`.
  return { guard, statement: db.insert(batchGuards).select(sql`select ${values} where ${violated}`), check };
}
