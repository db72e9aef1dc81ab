import { iso } from "../lib/time";

/*
 * An exposure as the API shows it (docs/decisions.md, "Employees and exposures"), built the same
 * way wherever it lives: D1's tables (services/exposures.ts) or a company's own object
 * (objects/company/exposures.ts). One builder, so the two homes never render it differently.
 */

/** A site's row as exposures and scan events read it: D1's `companies`, or the object's `sites`. */
export type SiteRow = { id: number; name: string; slug: string; logo: string | null; url: string };

/** The short company reference (OpenAPI component `CompanyRef`) of a people-search site. */
export type SiteRef = { id: number; name: string; slug: string; logo: string; url: string };

/** The site object carried by exposures, their history and scan events. */
export const toSite = (row: SiteRow): SiteRef => ({
  id: row.id,
  name: row.name,
  slug: row.slug,
  logo: row.logo ?? "",
  url: row.url,
});

export type ExposureStatus = "pending" | "in_progress" | "closed";

export type ExposureRow = {
  id: number;
  personId: number;
  status: ExposureStatus;
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
  site: toSite(row.site),
  url: row.url,
  data: row.data,
  created_at: iso(row.createdAt)!,
  updated_at: iso(row.updatedAt)!,
});

export type Exposure = ReturnType<typeof toExposure>;

/** History texts (docs/decisions.md, "Employees and exposures"): each is its prefix followed by the site's name. */
export const historyPrefix = {
  found: "Found on ",
  requested: "Removal requested from ",
  closed: "Removal confirmed by ",
} as const;
