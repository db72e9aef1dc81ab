import { iso } from "../lib/time";
import type { ExposureRecord, SiteRow } from "./company-scans";

/*
 * What scan and exposure events carry, and the history texts (docs/decisions.md, "Employees and
 * exposures"): one place for D1's commands (services/scans.ts, services/exposures.ts) and the
 * company's object (objects/company/scans.ts), so a payload reads the same whichever store raised it.
 */

/** The API's short company reference (OpenAPI component `CompanyRef`); a site is shown by it. */
export type CompanyRef = { id: number; name: string; slug: string; logo: string; url: string };

/**
 * The short company reference, used by the coworker directory, exposure history, exposures, scan
 * events and call-lookup.
 */
export const toCompanyRef = (row: SiteRow): CompanyRef => ({
  id: row.id,
  name: row.name,
  slug: row.slug,
  logo: row.logo ?? "",
  url: row.url,
});

/** The site object carried by exposures, their history and scan events: the short company reference. */
export const toSite = toCompanyRef;
export type SiteRef = CompanyRef;
export type { SiteRow };

export type ExposureStatus = ExposureRecord["status"];

/** An exposure with its site, as `toExposure` renders it. */
export type ExposureRow = {
  id: number;
  personId: number;
  status: ExposureRecord["status"];
  url: string | null;
  data: Record<string, unknown>;
  createdAt: Date;
  updatedAt: Date;
  site: SiteRow;
};

/** The exposure object of docs/decisions.md, also the `Exposure` webhook payload. */
export const toExposure = (row: ExposureRow) => ({
  id: row.id,
  employee_id: row.personId,
  status: row.status,
  site: toCompanyRef(row.site),
  url: row.url,
  data: row.data,
  created_at: iso(row.createdAt)!,
  updated_at: iso(row.updatedAt)!,
});

export type Exposure = ReturnType<typeof toExposure>;

/** `toExposure` of a row whose `data` is the JSON text a company's object keeps. */
export const toExposureFromText = (row: Omit<ExposureRow, "data"> & { data: string }) =>
  toExposure({ ...row, data: JSON.parse(row.data) as Record<string, unknown> });

/** History texts: each is its prefix followed by the site's name. */
export const historyPrefix = {
  found: "Found on ",
  requested: "Removal requested from ",
  closed: "Removal confirmed by ",
} as const;

/** The event each result of a scan raises. */
export const RESULT_EVENTS = { found: "scan:found", not_found: "scan:not_found", failed: "scan:failed" } as const;

/**
 * The data of a `scan:*` event: a result names its site; a `found` adds its `url` and `data`
 * (`found`, the listing as recorded: `url` null and `data` {} when the scanner gave none).
 */
export const scanEventPayload = (
  event: { scan_id: string; person_id: number; at: Date },
  site?: SiteRow,
  found?: { url: string | null; data: Record<string, unknown> },
) => ({
  scan_id: event.scan_id,
  person_id: event.person_id,
  ...(site ? { site: toCompanyRef(site) } : {}),
  at: iso(event.at)!,
  ...(found ?? {}),
});
