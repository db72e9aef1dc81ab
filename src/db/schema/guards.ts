import { integer, sqliteTable } from "drizzle-orm/sqlite-core";

/**
 * Batch guards (src/db/guard.ts): never holds a row. A guard statement at the
 * end of a batch inserts NULL into its own column when the condition it
 * checks fails; the NOT NULL constraint then rolls the whole batch back, and
 * the error names the column, so the command knows which guard refused.
 */
export const batchGuards = sqliteTable("batch_guards", {
  /** A company holds more seats of a license than it bought. */
  seats: integer("seats").notNull(),
  /** No member of a company holds `write settings` any more. */
  settingsWriter: integer("settings_writer").notNull(),
  /** A person keeps more contacts than allowed. */
  contactQuota: integer("contact_quota").notNull(),
  /** A company has more employees than allowed. */
  employeeQuota: integer("employee_quota").notNull(),
  /** A one-time code was spent by another request first (services/codes.ts). */
  codeSpent: integer("code_spent").notNull().default(0),
  /** The member a command changes or removes holds a permission its caller does not (services/employees). */
  standing: integer("standing").notNull().default(0),
  /** A command changed the person-wide details of someone who belongs to another company too (services/employees). */
  personWide: integer("person_wide").notNull().default(0),
});
