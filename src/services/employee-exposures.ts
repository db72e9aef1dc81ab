import { and, asc, count, eq, gte, inArray, sql } from "drizzle-orm";
import type { Db } from "../db/client";
import { inList } from "../db/sql";
import {
  companies,
  companyExposureCounts,
  companyExposures,
  exposureHistory,
  exposures,
  exposureStatuses,
  memberships,
} from "../db/schema";
import { refusal, type Answer } from "../lib/answer";
import { pageWindow, type Page } from "../lib/pagination";
import { iso } from "../lib/time";
import { companyOfExposure } from "../domain/company-scans";
import { toExposureFromText } from "../domain/scan-payloads";
import { exposureQuery, siteColumns, toExposure, toSite, type Exposure } from "./exposures";
import type { CompanyRow } from "./companies";
import type { Deps } from "./deps";

/** What the reads need of the company: which one, and where its scan side lives (read with the access check). */
type Home = Pick<CompanyRow, "id" | "scansInObject">;

/**
 * The reads of exposures a company makes about its employees
 * (`/companies/{company_id}/employees/exposures…`); the exposure life itself
 * is in `./exposures`.
 */
export type ExposureStatus = (typeof exposureStatuses)[number];

export type HistoryEntry = { event: string; company: ReturnType<typeof toSite>; when: string };

export type ExposureFilter = {
  /** Only exposures changed (created or moved) at or after this time. */
  since: Date | null;
  /** Only these employees; ids that are not employees of the company match nothing. */
  employees: number[] | null;
  /** Only these statuses. */
  statuses: ExposureStatus[] | null;
};

/** Every exposure read is filtered by the company's employees in SQL (tenancy). */
const ofEmployeesOf = (companyId: number) =>
  sql`${exposures.personId} in (select ${memberships.personId} from ${memberships} where ${memberships.companyId} = ${companyId})`;

/**
 * GET /employees/exposures (docs/decisions.md, "Exposures list"): one page of the company's
 * employees' exposures, oldest change first, so a client polling with
 * `since` reads them in the order they happened.
 *
 * Without an employee filter the page is a range of the company's rows in
 * `company_exposures` (its key is the page's order), and the total its
 * counts by status (`company_exposure_counts`) or, with `since`, the range
 * from `since` on: no read sorts or counts the company's whole set
 * (docs/performance.md, "Big companies"). With an employee filter the
 * named employees' exposures are read and sorted: a few people's.
 *
 * A company whose scan side lives in its object is answered by that object
 * (objects/company/exposures.ts, the same order, filters and total, its sites
 * from its own table): no D1 read.
 */
export async function listExposures(
  deps: Deps,
  company: Home,
  filter: ExposureFilter,
  page: Page,
): Promise<{ items: Exposure[]; total: number }> {
  const { db } = deps;
  const companyId = company.id;
  if (company.scansInObject) {
    const { limit, offset } = pageWindow(page);
    const { items, total } = await deps.companyObjects.of(companyId).exposurePage(filter, offset, limit);
    return {
      items: items.map(toExposureFromText),
      total,
    };
  }
  if (filter.employees) return listExposuresOf(db, companyId, { ...filter, employees: filter.employees }, page);
  const statuses = filter.statuses ?? exposureStatuses;
  const mine = and(
    eq(companyExposures.companyId, companyId),
    inArray(companyExposures.status, [...statuses]),
    filter.since ? gte(companyExposures.updatedAt, filter.since.getTime()) : undefined,
  );
  const { limit, offset } = pageWindow(page);
  const ids = db
    .select({ id: companyExposures.exposureId })
    .from(companyExposures)
    .where(mine)
    .orderBy(asc(companyExposures.updatedAt), asc(companyExposures.exposureId))
    .limit(limit)
    .offset(offset);
  const total = filter.since
    ? db.select({ n: count() }).from(companyExposures).where(mine)
    : db
        .select({ n: sql<number>`coalesce(sum(${companyExposureCounts.n}), 0)` })
        .from(companyExposureCounts)
        .where(
          and(eq(companyExposureCounts.companyId, companyId), inArray(companyExposureCounts.status, [...statuses])),
        );
  // Not one db.batch: drizzle maps D1 batch rows by column name, and this join
  // selects `id` and `url` of both the exposure and the site.
  const [rows, [counted]] = await Promise.all([
    exposureQuery(db).where(inArray(exposures.id, ids)).orderBy(asc(exposures.updatedAt), asc(exposures.id)),
    total,
  ]);
  return { items: rows.map(toExposure), total: counted?.n ?? 0 };
}

/** The page for named employees: their exposures, filtered by the company's employees in SQL (tenancy), sorted. */
async function listExposuresOf(
  db: Db,
  companyId: number,
  filter: ExposureFilter & { employees: number[] },
  page: Page,
): Promise<{ items: Exposure[]; total: number }> {
  const where = and(
    ofEmployeesOf(companyId),
    inList(exposures.personId, filter.employees),
    filter.statuses ? inArray(exposures.status, filter.statuses) : undefined,
    filter.since ? gte(exposures.updatedAt, filter.since) : undefined,
  );
  const { limit, offset } = pageWindow(page);
  const [rows, [total]] = await Promise.all([
    exposureQuery(db).where(where).orderBy(asc(exposures.updatedAt), asc(exposures.id)).limit(limit).offset(offset),
    db.select({ n: count() }).from(exposures).where(where),
  ]);
  return { items: rows.map(toExposure), total: total?.n ?? 0 };
}

/**
 * The history of one exposure (OpenAPI component `ExposureHistoryEntry`;
 * docs/decisions.md, "Employees and exposures"), oldest first; a 404 refusal
 * when there is no such exposure of an employee of the company.
 */
export async function getExposureHistory(
  deps: Deps,
  company: Home,
  exposureId: number,
): Promise<Answer<{ history: HistoryEntry[] }>> {
  const { db } = deps;
  const companyId = company.id;
  if (company.scansInObject) {
    // The object's ids name their company (domain/company-scans.ts): another company's is not one of its. A
    // D1 id may be one the operator's move carried into it (services/company-scan-moves.ts): the object says.
    const owner = companyOfExposure(exposureId);
    const lines =
      owner === companyId || owner === null
        ? await deps.companyObjects.of(companyId).exposureHistory(exposureId)
        : null;
    if (lines === null) return refusal(404, `exposure ${exposureId} does not exist`);
    return {
      ok: true,
      history: lines.map((line) => ({ event: line.event, company: toSite(line.site), when: iso(line.createdAt)! })),
    };
  }
  const mine = and(eq(exposures.id, exposureId), ofEmployeesOf(companyId));
  const [owner, rows] = await db.batch([
    db.select({ id: exposures.id }).from(exposures).where(mine),
    db
      .select({ event: exposureHistory.event, createdAt: exposureHistory.createdAt, site: siteColumns })
      .from(exposureHistory)
      .innerJoin(exposures, eq(exposures.id, exposureHistory.exposureId))
      .innerJoin(companies, eq(companies.id, exposureHistory.siteId))
      .where(mine)
      .orderBy(asc(exposureHistory.createdAt), asc(exposureHistory.id)),
  ]);
  if (owner.length === 0) return refusal(404, `exposure ${exposureId} does not exist`);
  return {
    ok: true,
    history: rows.map((row) => ({ event: row.event, company: toSite(row.site), when: iso(row.createdAt)! })),
  };
}
