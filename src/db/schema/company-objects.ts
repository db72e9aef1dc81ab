import { integer, primaryKey, sqliteTable, text } from "drizzle-orm/sqlite-core";
import { companies } from "./companies";

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
    /**
     * When the sweep may try this row again: 0 until a call to the object failed, then later and
     * later (`attempts`), so companies whose objects do not answer never hold up the others.
     */
    retryAt: integer("retry_at").notNull().default(0),
    attempts: integer("attempts").notNull().default(0),
  },
  (t) => [primaryKey({ columns: [t.companyId, t.personId] })],
);

/**
 * The operator's move of an older company's scan side from D1 into its object
 * (services/company-scan-moves.ts): a row while the company's move is under way, saying its
 * stage (`copy` before the flip of `companies.scans_in_object`, `recopy` and `clean` after),
 * so a move started again resumes the stage it was in. Gone once the move finished.
 */
export const companyScanMoves = sqliteTable("company_scan_moves", {
  companyId: integer("company_id")
    .primaryKey()
    .references(() => companies.id, { onDelete: "cascade" }),
  stage: text("stage", { enum: ["copy", "recopy", "clean"] }).notNull(),
});

/**
 * Exposures that were open (pending or in progress) when the move copied them into a company's
 * object, where they keep their D1 id (below 2^28, so `companyOfExposure` names no company): a
 * scanner's `removal_confirmed` of such an id reaches the objects named here (services/scans.ts).
 */
export const movedExposures = sqliteTable(
  "moved_exposures",
  {
    exposureId: integer("exposure_id").notNull(),
    companyId: integer("company_id")
      .notNull()
      .references(() => companies.id, { onDelete: "cascade" }),
  },
  (t) => [primaryKey({ columns: [t.exposureId, t.companyId] })],
);
