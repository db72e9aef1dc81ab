import type { EventName } from "./events";

/*
 * The scan side of a company in its own object (docs/architecture.md, "The Company object"): what
 * the Worker and the `Company` object say to each other about scans, exposures and their events.
 * Dates cross the RPC as `Date`; JSON data as text where the object keeps it as text.
 */

/** A company's exposure ids: `companyId × 2^28 + n` (n from 1), above every id D1 hands out. */
export const EXPOSURE_ID_SPAN = 2 ** 28;

/** The first exposure id of a company's object, less one. */
export const exposureIdBase = (companyId: number) => companyId * EXPOSURE_ID_SPAN;

/** The company whose object gave this exposure id; null for an id of D1's own tables. */
export const companyOfExposure = (exposureId: number): number | null => {
  const companyId = Math.floor(exposureId / EXPOSURE_ID_SPAN);
  return companyId > 0 ? companyId : null;
};

/** A people-search site as scan events and exposures show it (OpenAPI component `CompanyRef`). */
export type SiteRow = { id: number; name: string; slug: string; logo: string | null; url: string };

/** A scan event of a run, as the consumer validated it (domain/scan-events.ts), for one employee. */
export type ScanRunEvent =
  | { type: "started" | "completed"; scan_id: string; person_id: number; at: Date }
  | {
      type: "found" | "not_found" | "failed";
      scan_id: string;
      person_id: number;
      site_id: number;
      url?: string | undefined;
      data?: Record<string, unknown> | undefined;
      at: Date;
    };

/** An exposure as the object keeps it; the Worker renders it with its site (services/exposures.ts `toExposure`). */
export type ExposureRecord = {
  id: number;
  personId: number;
  siteId: number;
  status: "pending" | "in_progress" | "closed";
  url: string | null;
  data: Record<string, unknown>;
  createdAt: Date;
  updatedAt: Date;
};

/** The exposures page's filter (services/employee-exposures.ts `ExposureFilter`). */
export type ExposurePageFilter = {
  since: Date | null;
  employees: number[] | null;
  statuses: ExposureRecord["status"][] | null;
};

/** One line of an exposure's history, oldest first. */
export type ExposureHistoryLine = { event: string; siteId: number; createdAt: Date };

/** What a company's object knows of one employee's exposures, for the Person resource (services/people.ts). */
export type ExposureCounts = {
  personId: number;
  pending: number;
  in_progress: number;
  closed: number;
  /** Sites whose newest conclusive result for the person is `not_found`. */
  notFound: number;
};

/**
 * An event the object raised, waiting in its outbox until D1 recorded it as deliveries; `at` is when
 * the object applied its change (ms), the delivery body's `timestamp` however late D1 records it.
 */
export type CompanyEvent = { seq: number; event: EventName; payload: string; at: number };

/**
 * One chunk of a company's scan side as D1 keeps it, given to the company's object by the
 * operator's move (services/company-scan-moves.ts; objects/company/scan-import.ts): some members'
 * scans, results, exposures (with D1's ids) and their history, and the sites they name. JSON data
 * as text, as the object keeps it.
 */
export type ScanSideChunk = {
  scans: {
    id: string;
    personId: number;
    status: "started" | "completed";
    startedAt: Date | null;
    completedAt: Date | null;
    createdAt: Date;
    updatedAt: Date;
  }[];
  results: {
    scanId: string;
    personId: number;
    siteId: number;
    outcome: "found" | "not_found" | "failed";
    url: string | null;
    data: string | null;
    at: Date;
    createdAt: Date;
  }[];
  exposures: (Omit<ExposureRecord, "data"> & { data: string; requestedAt: Date | null; closedAt: Date | null })[];
  history: (ExposureHistoryLine & { exposureId: number })[];
  sites: SiteRow[];
};
