import { sql } from "drizzle-orm";
import { index, sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";
import { companies } from "./companies";
import { cascadeRef, createdAt, id, timestamp, updatedAt } from "./columns";
import { people } from "./people";

/** A scan of one person across sites; the id is the scanner's `scan_id`. */
export const scans = sqliteTable(
  "scans",
  {
    id: text("id").primaryKey(),
    personId: cascadeRef("person_id", () => people.id),
    status: text("status", { enum: ["started", "completed"] }).notNull(),
    startedAt: timestamp("started_at"),
    completedAt: timestamp("completed_at"),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (t) => [
    index("scans_person_idx").on(t.personId),
    // Retention (src/services/retention.ts): finished scans by the time they finished.
    index("scans_completed_idx")
      .on(t.completedAt)
      .where(sql`${t.completedAt} is not null`),
  ],
);

/**
 * One site's outcome within a scan. Unique per (scan, site) so a redelivered
 * scan event is applied once.
 */
export const scanResults = sqliteTable(
  "scan_results",
  {
    id: id(),
    scanId: text("scan_id").notNull(),
    personId: cascadeRef("person_id", () => people.id),
    siteId: cascadeRef("site_id", () => companies.id),
    outcome: text("outcome", { enum: ["found", "not_found", "failed"] }).notNull(),
    url: text("url"),
    data: text("data", { mode: "json" }).$type<Record<string, unknown>>(),
    at: timestamp("at").notNull(),
    createdAt: createdAt(),
  },
  (t) => [
    uniqueIndex("scan_results_scan_site_uq").on(t.scanId, t.siteId),
    index("scan_results_person_site_idx").on(t.personId, t.siteId, t.at),
    // Retention (src/services/retention.ts): superseded results by the time they were recorded.
    index("scan_results_created_idx").on(t.createdAt),
  ],
);

export const exposureStatuses = ["pending", "in_progress", "closed"] as const;

/** A listing of a person found on a people-search site (docs/decisions.md). */
export const exposures = sqliteTable(
  "exposures",
  {
    id: id(),
    personId: cascadeRef("person_id", () => people.id),
    siteId: cascadeRef("site_id", () => companies.id),
    status: text("status", { enum: exposureStatuses }).notNull().default("pending"),
    url: text("url"),
    data: text("data", { mode: "json" }).$type<Record<string, unknown>>().notNull().default({}),
    requestedAt: timestamp("requested_at"),
    closedAt: timestamp("closed_at"),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (t) => [
    index("exposures_person_status_idx").on(t.personId, t.status),
    index("exposures_status_idx").on(t.status, t.id),
    index("exposures_updated_idx").on(t.updatedAt),
    // Retention (src/services/retention.ts): closed exposures by the time they closed.
    index("exposures_closed_idx")
      .on(t.closedAt)
      .where(sql`${t.closedAt} is not null`),
    // One open exposure per listing (person, site, url; a missing url is one listing):
    // a concurrent or redelivered `found` inserts with ON CONFLICT DO NOTHING.
    uniqueIndex("exposures_open_listing_uq")
      .on(t.personId, t.siteId, sql`coalesce(${t.url}, '')`)
      .where(sql`${t.status} in ('pending', 'in_progress')`),
  ],
);

export const exposureHistory = sqliteTable(
  "exposure_history",
  {
    id: id(),
    exposureId: cascadeRef("exposure_id", () => exposures.id),
    siteId: cascadeRef("site_id", () => companies.id),
    event: text("event").notNull(),
    createdAt: createdAt(),
  },
  (t) => [index("exposure_history_exposure_idx").on(t.exposureId, t.createdAt)],
);
