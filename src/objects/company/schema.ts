import { index, integer, sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";
import { timestamp } from "../../db/schema/columns";

/*
 * The tables inside one company's Durable Object (docs/architecture.md, "The
 * Company object"): only that company's rows, so no table has a company
 * column. Migrations: drizzle-company/ (npm run db:generate:company).
 */

/**
 * The company's finished webhook deliveries: a history entry once it
 * succeeded or failed for good. D1 keeps a delivery while it is on its way
 * (pending, or waiting for a retry: the outbox the command wrote in its own
 * batch); once finished it is handed here and leaves D1
 * (services/webhook-delivery/archive.ts). `seq` is the row's place in D1
 * (its rowid), so entries created in the same millisecond keep D1's order.
 */
export const deliveries = sqliteTable(
  "deliveries",
  {
    id: text("id").primaryKey(),
    seq: integer("seq").notNull(),
    webhookId: integer("webhook_id"),
    event: text("event").notNull(),
    /** The body's JSON text. */
    payload: text("payload").notNull(),
    status: text("status", { enum: ["success", "failed"] }).notNull(),
    result: text("result").notNull(),
    attempts: integer("attempts").notNull(),
    deliveredAt: timestamp("delivered_at"),
    createdAt: timestamp("created_at").notNull(),
    /** When it finished (D1's `updated_at` at the hand-over): retention counts from here. */
    finishedAt: timestamp("finished_at").notNull(),
    /** 1 while a resend has it on its way again in D1: D1's row answers for it until it finishes again. */
    resent: integer("resent").notNull().default(0),
  },
  (t) => [
    index("deliveries_created_idx").on(t.createdAt, t.seq),
    index("deliveries_finished_idx").on(t.status, t.finishedAt),
  ],
);

/** Every POST made for a history entry, as D1 recorded it; handed over with its entry. */
export const attempts = sqliteTable(
  "attempts",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    deliveryId: text("delivery_id")
      .notNull()
      .references(() => deliveries.id, { onDelete: "cascade" }),
    at: timestamp("at").notNull(),
    result: text("result").notNull(),
    durationMs: integer("duration_ms").notNull(),
  },
  // A hand-over repeated (the consumer's, then the sweep's) adds no attempt twice.
  (t) => [uniqueIndex("attempts_delivery_at_uq").on(t.deliveryId, t.at, t.result, t.durationMs)],
);

/*
 * The scan side of the company (docs/architecture.md, "The Company object"): its employees' scans,
 * their results, the exposures they found and each exposure's history, for a company whose scan
 * side lives here (D1's `companies.scans_in_object`; companies created since migration 0032). Each
 * company keeps its own copy of what a scan of its employee found: a person in two such companies
 * is scanned into both. Rows carry the person (an employee of the company) but no company column.
 */

/** A scan of one employee across sites; the id is the scanner's `scan_id`. */
export const scans = sqliteTable(
  "scans",
  {
    id: text("id").primaryKey(),
    personId: integer("person_id").notNull(),
    status: text("status", { enum: ["started", "completed"] }).notNull(),
    startedAt: timestamp("started_at"),
    completedAt: timestamp("completed_at"),
    createdAt: timestamp("created_at").notNull(),
    updatedAt: timestamp("updated_at").notNull(),
  },
  (t) => [index("scans_person_idx").on(t.personId), index("scans_completed_idx").on(t.completedAt)],
);

/** One site's outcome within a scan, once per (scan, site). */
export const scanResults = sqliteTable(
  "scan_results",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    scanId: text("scan_id").notNull(),
    personId: integer("person_id").notNull(),
    siteId: integer("site_id").notNull(),
    outcome: text("outcome", { enum: ["found", "not_found", "failed"] }).notNull(),
    url: text("url"),
    /** The JSON text of what the scan found, or null. */
    data: text("data"),
    at: timestamp("at").notNull(),
    createdAt: timestamp("created_at").notNull(),
  },
  (t) => [
    uniqueIndex("scan_results_scan_site_uq").on(t.scanId, t.siteId),
    index("scan_results_person_site_idx").on(t.personId, t.siteId, t.at),
    index("scan_results_created_idx").on(t.createdAt),
  ],
);

/**
 * A listing of an employee found on a people-search site. The id is the company's id × 2^28 plus
 * the company's own count (`exposureIdBase`, domain/company-scans.ts), so an id names its company
 * without a directory row and never collides with D1's (smaller) ids or another company's.
 */
export const exposures = sqliteTable(
  "exposures",
  {
    id: integer("id").primaryKey(),
    personId: integer("person_id").notNull(),
    siteId: integer("site_id").notNull(),
    status: text("status", { enum: ["pending", "in_progress", "closed"] }).notNull(),
    url: text("url"),
    /** The JSON text of the listing's data. */
    data: text("data").notNull(),
    requestedAt: timestamp("requested_at"),
    closedAt: timestamp("closed_at"),
    createdAt: timestamp("created_at").notNull(),
    updatedAt: timestamp("updated_at").notNull(),
  },
  (t) => [
    // The exposures page's order (oldest change first), and its status filter.
    index("exposures_updated_idx").on(t.updatedAt, t.id),
    index("exposures_status_idx").on(t.status, t.updatedAt, t.id),
    index("exposures_person_idx").on(t.personId, t.status),
    index("exposures_closed_idx").on(t.closedAt),
  ],
);

/** What happened to an exposure, oldest first: "Found on …", "Removal requested from …", "Removal confirmed by …". */
export const exposureHistory = sqliteTable(
  "exposure_history",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    exposureId: integer("exposure_id")
      .notNull()
      .references(() => exposures.id, { onDelete: "cascade" }),
    siteId: integer("site_id").notNull(),
    event: text("event").notNull(),
    createdAt: timestamp("created_at").notNull(),
  },
  (t) => [index("exposure_history_exposure_idx").on(t.exposureId, t.createdAt)],
);

/**
 * The webhook events the object's changes raised, written in the same transaction as the change,
 * until the Worker has recorded them as deliveries in D1 (services/company-events.ts) and
 * acknowledged them: the object's outbox.
 */
export const events = sqliteTable("events", {
  seq: integer("seq").primaryKey({ autoIncrement: true }),
  event: text("event").notNull(),
  /** The JSON text of the event's data. */
  payload: text("payload").notNull(),
  createdAt: timestamp("created_at").notNull(),
});

/** Small named values of the object: the next exposure number, when the removal step is due. */
export const counters = sqliteTable("counters", {
  name: text("name").primaryKey(),
  value: integer("value").notNull(),
});

/**
 * The people-search sites the company's exposures name, as the last scan run that named each
 * showed it (the consumer reads them from D1 with the run): the object renders exposures, their
 * history and their events with no D1 read.
 */
export const sites = sqliteTable("sites", {
  id: integer("id").primaryKey(),
  name: text("name").notNull(),
  slug: text("slug").notNull(),
  logo: text("logo"),
  url: text("url").notNull(),
});
