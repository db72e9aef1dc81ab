import { sql } from "drizzle-orm";
import { index, integer, primaryKey, sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";
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

/**
 * Each company's employees' exposures in the order the company's exposures
 * page reads them (`updated_at`, then id), so a page is an index range of its
 * company, not a sort of the company's whole set (docs/performance.md,
 * "Big companies"). A row per exposure and company of its person; kept by
 * triggers on `exposures` and `memberships`
 * (drizzle/0023_company_list_counts_triggers.sql), in the same transaction as
 * every change, whoever writes it. No foreign keys: the triggers remove the
 * rows with their exposure or membership.
 */
export const companyExposures = sqliteTable(
  "company_exposures",
  {
    companyId: integer("company_id").notNull(),
    updatedAt: integer("updated_at").notNull(),
    exposureId: integer("exposure_id").notNull(),
    status: text("status", { enum: exposureStatuses }).notNull(),
  },
  // The status is the key's last column so that the key's index answers a page alone.
  (t) => [primaryKey({ columns: [t.companyId, t.updatedAt, t.exposureId, t.status] })],
);

/**
 * How many exposures of each status a company's employees have: the
 * exposures page's `X-Total-Count` in one read. Kept by triggers on
 * `company_exposures` (drizzle/0023_company_list_counts_triggers.sql).
 */
export const companyExposureCounts = sqliteTable(
  "company_exposure_counts",
  {
    companyId: integer("company_id").notNull(),
    status: text("status", { enum: exposureStatuses }).notNull(),
    n: integer("n").notNull(),
  },
  (t) => [primaryKey({ columns: [t.companyId, t.status] })],
);
