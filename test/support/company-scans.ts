import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { drizzle, type DrizzleSqliteDODatabase } from "drizzle-orm/durable-sqlite";
import { exposureIdBase } from "../../src/domain/company-scans";
import { companyStub, type CompanyStub } from "../../src/objects/company/stub";
import type { Deps } from "../../src/services/deps";
import { recountStatuses } from "../../src/objects/company/exposures";

/*
 * The scan side of a company in its own object, for tests: seeding its tables directly (the write
 * path is the scan consumer's), running the object's pure functions inside it, and choosing where
 * a company's scan side lives (`companies.scans_in_object`).
 */

export const companyObject = (companyId: number) => companyStub(env.COMPANY, companyId);

/**
 * `deps` whose company objects run `meanwhile` before each call of `method` (and then the call,
 * with its answer): what another request does between a command's reads and its object call.
 */
export function meanwhileInCompanyObjects(
  deps: Deps,
  method: keyof CompanyStub,
  meanwhile: (answer: () => Promise<unknown>) => Promise<unknown>,
): Deps {
  return {
    ...deps,
    companyObjects: {
      of: (companyId: number) =>
        new Proxy(deps.companyObjects.of(companyId), {
          get: (target, key) =>
            key === method
              ? (...args: unknown[]) =>
                  meanwhile(() => (target[method] as (...given: unknown[]) => Promise<unknown>)(...args))
              : (Reflect.get(target, key) as unknown),
        }),
    },
  } as Deps;
}

/** Runs `work` with the drizzle handle of company `companyId`'s object, inside the object. */
export const inCompanyDb = <T>(companyId: number, work: (db: DrizzleSqliteDODatabase) => T): Promise<T> =>
  runInDurableObject(companyObject(companyId), (_, state) => work(drizzle(state.storage)));

/** Runs SQL inside company `companyId`'s object and returns its rows. */
export const inCompanyObject = <T extends Record<string, SqlStorageValue>>(
  companyId: number,
  query: string,
  ...params: SqlStorageValue[]
): Promise<T[]> =>
  runInDurableObject(companyObject(companyId), (_, state) => state.storage.sql.exec<T>(query, ...params).toArray());

/** The `n` of a `SELECT count(*) AS n …` inside company `companyId`'s object. */
export const countInCompanyObject = async (companyId: number, query: string, ...params: SqlStorageValue[]) =>
  (await inCompanyObject<{ n: number }>(companyId, query, ...params))[0]!.n;

/** Where company `companyId`'s scan side lives from now on: its object (true) or D1's tables (false). */
export const scansInObject = (companyId: number, inObject: boolean) =>
  env.DB.prepare("UPDATE companies SET scans_in_object = ? WHERE id = ?")
    .bind(inObject ? 1 : 0, companyId)
    .run();

/** The demo world's sites as D1 has them (id, name, slug, logo, url). */
export const DEMO_SITE_ROWS = [
  { id: 3, name: "PeopleFinder", slug: "peoplefinder", logo: null, url: "https://peoplefinder.example" },
  { id: 4, name: "SpyDirectory", slug: "spydirectory", logo: null, url: "https://spydirectory.example" },
  {
    id: 5,
    name: "WhitePages Archive",
    slug: "whitepages-archive",
    logo: null,
    url: "https://whitepages-archive.example",
  },
];

/** The `n`th exposure id of company `companyId`'s object. */
export const objectExposureId = (companyId: number, n: number) => exposureIdBase(companyId) + n;

export type SeedExposure = {
  id: number;
  personId: number;
  siteId: number;
  status: "pending" | "in_progress" | "closed";
  url?: string | null;
  data?: Record<string, unknown>;
  createdAt: number;
  updatedAt: number;
  closedAt?: number | null;
};

/**
 * Seeds company `companyId`'s object as a scan run would have left it: its sites (the demo world's
 * by default), exposures, history lines and scan results; the status counters are recounted.
 */
export async function seedCompanyScans(
  companyId: number,
  seed: {
    sites?: typeof DEMO_SITE_ROWS;
    exposures?: SeedExposure[];
    history?: { exposureId: number; siteId: number; event: string; createdAt: number }[];
    results?: { scanId: string; personId: number; siteId: number; outcome: string; at: number; createdAt?: number }[];
    scans?: { id: string; personId: number; completedAt: number | null; createdAt: number }[];
  },
) {
  await runInDurableObject(companyObject(companyId), (_, state) => {
    const sql = state.storage.sql;
    for (const site of seed.sites ?? DEMO_SITE_ROWS)
      sql.exec(
        "INSERT OR REPLACE INTO sites (id, name, slug, logo, url) VALUES (?, ?, ?, ?, ?)",
        site.id,
        site.name,
        site.slug,
        site.logo,
        site.url,
      );
    for (const e of seed.exposures ?? [])
      sql.exec(
        `INSERT INTO exposures (id, person_id, site_id, status, url, data, requested_at, closed_at, created_at, updated_at)
         VALUES (?, ?, ?, ?, ?, ?, NULL, ?, ?, ?)`,
        e.id,
        e.personId,
        e.siteId,
        e.status,
        e.url ?? null,
        JSON.stringify(e.data ?? {}),
        e.closedAt ?? (e.status === "closed" ? e.updatedAt : null),
        e.createdAt,
        e.updatedAt,
      );
    for (const h of seed.history ?? [])
      sql.exec(
        "INSERT INTO exposure_history (exposure_id, site_id, event, created_at) VALUES (?, ?, ?, ?)",
        h.exposureId,
        h.siteId,
        h.event,
        h.createdAt,
      );
    for (const r of seed.results ?? [])
      sql.exec(
        "INSERT INTO scan_results (scan_id, person_id, site_id, outcome, at, created_at) VALUES (?, ?, ?, ?, ?, ?)",
        r.scanId,
        r.personId,
        r.siteId,
        r.outcome,
        r.at,
        r.createdAt ?? r.at,
      );
    for (const s of seed.scans ?? [])
      sql.exec(
        `INSERT INTO scans (id, person_id, status, started_at, completed_at, created_at, updated_at)
         VALUES (?, ?, ?, ?, ?, ?, ?)`,
        s.id,
        s.personId,
        s.completedAt === null ? "started" : "completed",
        s.createdAt,
        s.completedAt,
        s.createdAt,
        s.completedAt ?? s.createdAt,
      );
    recountStatuses(drizzle(state.storage));
  });
}

/** Writes person `id` with a membership in each of `companies`, by SQL (a scan's subject; no object is started). */
export async function insertEmployee(id: number, companies: number[], firstName = "Scan") {
  await env.DB.batch([
    env.DB.prepare(
      "INSERT INTO people (id, first_name, last_name, created_at, updated_at) VALUES (?, ?, 'Subject', 0, 0)",
    ).bind(id, firstName),
    ...companies.map((company) =>
      env.DB.prepare(
        "INSERT INTO memberships (company_id, person_id, created_at, updated_at) VALUES (?, ?, 0, 0)",
      ).bind(company, id),
    ),
  ]);
  return id;
}
