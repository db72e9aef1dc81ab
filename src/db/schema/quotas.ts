import { integer, primaryKey, sqliteTable } from "drizzle-orm/sqlite-core";

/**
 * Trust requests a person sent per UTC day, matched or not (docs/decisions.md:
 * at most 100 a day). One row per person per day they asked; the daily cron
 * drops days before yesterday. No foreign key: a row outlives its person by a
 * day at most, and people ids are never reused. The key leads with `day` so
 * that drop is a range of the key.
 */
export const trustRequestDays = sqliteTable(
  "trust_request_days",
  {
    /** Days since 1970-01-01, UTC. */
    day: integer("day").notNull(),
    personId: integer("person_id").notNull(),
    sent: integer("sent").notNull(),
  },
  (t) => [primaryKey({ columns: [t.day, t.personId] })],
);

