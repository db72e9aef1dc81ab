import { integer, primaryKey, sqliteTable } from "drizzle-orm/sqlite-core";

/*
 * D1's side of the steps that cross from the directory into a company's object
 * (docs/architecture.md, "The Company object"): a row per company, never per row of its data.
 */

/**
 * The last event of each company's object recorded as webhook deliveries in D1
 * (services/company-events.ts): the batch that records a run of events moves the mark forward
 * and inserts the deliveries only when it moved, so a run forwarded twice is recorded once.
 */
export const companyEventMarks = sqliteTable("company_event_marks", {
  companyId: integer("company_id").primaryKey(),
  seq: integer("seq").notNull(),
});

/**
 * People a company's object must forget (their membership ended, or they were removed): written
 * in the batch that ends the membership, deleted once the object forgot them; the minute sweep
 * retries what is left (services/company-forgets.ts).
 */
export const companyForgets = sqliteTable(
  "company_forgets",
  {
    companyId: integer("company_id").notNull(),
    personId: integer("person_id").notNull(),
    dueAt: integer("due_at").notNull(),
  },
  (t) => [primaryKey({ columns: [t.companyId, t.personId] })],
);
