import { and, asc, count, eq, gt, gte, inArray, lt, sql } from "drizzle-orm";
import { companyEmployeeCounts, memberships, personEmails } from "../../db/schema";
import { batchableAll } from "../../db/sql";
import { refusal, type Answer } from "../../lib/answer";
import { pageWindow, type Page } from "../../lib/pagination";
import { objectExposureCounts } from "../exposure-counts";
import { loadPerson, peopleReads, visibleEmail, type PersonBody } from "../people";
import type { Deps } from "../deps";

/**
 * One page of the company's employees as the response body (JSON text,
 * written straight from the rows: services/people.ts, as UTF-8), and how many match.
 * `search` keeps those with an email starting with it (docs/decisions.md,
 * "What a company sees of a person"). The
 * prefix is a range on the lowercased, uniquely indexed email
 * (`email >= p AND email < p⁺`), so SQLite seeks the index instead of
 * scanning every address as `LIKE 'p%'` would.
 *
 * A page this isolate rendered before is answered again while the company's
 * list version is the one it was rendered under (`pageCache`), with no
 * read of its own: the caller passes the version the access check read
 * (`knownVersion`), instead of the page's reads and their rendering. Otherwise the
 * version, the count and the page's reads are one D1 round trip (one
 * transaction, so the version is the one of exactly the rows rendered).
 *
 * A company whose scan side is in its object (`scansInObject`) keeps its
 * employees' exposure counts there, which D1's version does not follow: its
 * page is kept with marks where the counts go, filled from the object on every
 * answer (one call of the object, no D1 read; services/people.ts `fillExposureCounts`).
 */
export async function listEmployees(
  deps: Deps,
  companyId: number,
  search: string | null,
  page: Page,
  /** The list version the caller read already (the access check reads it), so a cached page costs no read. */
  knownVersion: string | null,
  /** Keyset paging: the employees with an id greater than this, from the first (`page` is then 1). */
  after: number | null = null,
  /** Whether the company's scan side lives in its object (`companies.scans_in_object`, read with the access check). */
  scansInObject = false,
) {
  const { db } = deps;
  const { limit, offset } = pageWindow(page);
  const key = pageKey(companyId, search, limit, offset, after, scansInObject);
  const cached = pageCache.get(key);
  if (cached !== undefined) {
    if (knownVersion === cached.version && Date.now() - cached.renderedAt < PAGE_MAX_AGE_MS) {
      pageCache.touch(key, cached);
      const body =
        cached.marked === null
          ? cached.body
          : (utf8.encode(await objectExposureCounts(deps, companyId, cached.marked)) as Uint8Array<ArrayBuffer>);
      return { body, total: cached.total, last: cached.last };
    }
  }
  const upper = search ? prefixUpperBound(search) : null;
  // With a search, the email range drives: SQLite reads the matching addresses
  // from the unique index, then probes (company_id, person_id) for each.
  const where = and(
    eq(memberships.companyId, companyId),
    search
      ? inArray(
          memberships.personId,
          db
            .select({ personId: personEmails.personId })
            .from(personEmails)
            .where(
              and(
                gte(personEmails.email, search),
                upper === null ? undefined : lt(personEmails.email, upper),
                visibleEmail(companyId),
              ),
            ),
        )
      : undefined,
  );
  // `after` seeks the (company_id, person_id) index: no walk over the pages before it.
  const ids = db
    .select({ personId: memberships.personId })
    .from(memberships)
    .where(after === null ? where : and(where, gt(memberships.personId, after)))
    .orderBy(asc(memberships.personId))
    .limit(limit)
    .offset(offset);
  const reads = peopleReads(db, companyId, ids, scansInObject);
  // Without a search the total is the company's count (kept by triggers), not a count of its memberships.
  const total = search
    ? db.select({ n: count() }).from(memberships).where(where)
    : db
        .select({ n: sql<number>`coalesce(max(${companyEmployeeCounts.n}), 0)` })
        .from(companyEmployeeCounts)
        .where(eq(companyEmployeeCounts.companyId, companyId));
  const [versions, [counted], ...results] = await db.batch([
    batchableAll<{ version: string }>(
      db,
      sql`select version from company_list_versions where company_id = ${companyId}`,
    ),
    total,
    ...reads.statements,
  ]);
  // Encoded once: a Response copies its bytes, so every answer of the page can be sent from them.
  const base = results[0] as { id: number }[];
  const text = reads.render(results);
  const rendered = {
    body: utf8.encode(
      scansInObject ? await objectExposureCounts(deps, companyId, text) : text,
    ) as Uint8Array<ArrayBuffer>,
    total: counted?.n ?? 0,
    /** The page's last employee id, the `after` of the page following it; null on an empty page. */
    last: base[base.length - 1]?.id ?? null,
  };
  const version = (versions as { version: string }[])[0]?.version;
  if (version !== undefined)
    pageCache.set(key, {
      version,
      renderedAt: Date.now(),
      ...rendered,
      ...(scansInObject ? { body: EMPTY, marked: text } : { marked: null }),
    });
  return rendered;
}

/** A page's key: a company whose scan side moved home renders its pages afresh. */
const pageKey = (
  companyId: number,
  search: string | null,
  limit: number,
  offset: number,
  after: number | null,
  scansInObject: boolean,
) => JSON.stringify([companyId, search, limit, offset, after, scansInObject]);

const utf8 = new TextEncoder();
const EMPTY = new Uint8Array(0);

type CachedPage = {
  version: string;
  renderedAt: number;
  body: Uint8Array<ArrayBuffer>;
  /** The rendering with marks for the exposure counts a company's object gives (else null: `body` is the page). */
  marked: string | null;
  total: number;
  last: number | null;
};

/**
 * How long a rendered page may be answered: a login (`last_login_at`, written at most hourly)
 * does not change the list version (drizzle/0022_logins_keep_list_pages.sql), so the
 * `last_login` a page shows is at most this much older than the hourly write.
 */
export const PAGE_MAX_AGE_MS = 3600 * 1000;

/**
 * Rendered pages of this isolate, by company, search and window, each with
 * the company's list version it was rendered under (`company_list_versions`,
 * kept by the triggers of drizzle/0015_company_list_versions.sql: every
 * change to a row a page shows gives the version a new random value in the
 * change's own transaction). A page is answered from here only after D1 says
 * the version is still that one, so it is never staler than a fresh read:
 * what it holds is exactly what the page's reads give while the version
 * holds — except `last_login`, which logins change without a new version
 * and which a page shows at most `PAGE_MAX_AGE_MS` old. One entry per page (a newer rendering replaces it), the least
 * recently used go first past `MAX_CACHED_BYTES` in all; a company's
 * version is its own, and the key starts with the company, so tenants
 * never share an entry.
 */
const MAX_CACHED_BYTES = 8 * 1024 * 1024;
/** What a kept page weighs: its bytes, or its marked text's (UTF-16, two bytes a unit). */
const sizeOf = (page: CachedPage) => page.body.byteLength + (page.marked === null ? 0 : page.marked.length * 2);
const pageCache = (() => {
  const pages = new Map<string, CachedPage>();
  let bytes = 0;
  const drop = (key: string) => {
    const page = pages.get(key);
    if (page === undefined) return;
    pages.delete(key);
    bytes -= sizeOf(page);
  };
  return {
    get: (key: string) => pages.get(key),
    /**
     * Marks the page as just used (a Map iterates in insertion order: the oldest first),
     * unless another request replaced it meanwhile.
     */
    touch(key: string, page: CachedPage) {
      if (pages.get(key) !== page) return;
      pages.delete(key);
      pages.set(key, page);
    },
    set(key: string, page: CachedPage) {
      drop(key);
      if (sizeOf(page) > MAX_CACHED_BYTES / 4) return;
      pages.set(key, page);
      bytes += sizeOf(page);
      for (const oldest of pages.keys()) {
        if (bytes <= MAX_CACHED_BYTES) break;
        drop(oldest);
      }
    },
    clear() {
      pages.clear();
      bytes = 0;
    },
    get size() {
      return pages.size;
    },
  };
})();

/** For tests: how many pages this isolate holds, and forgetting them (the next read of each renders it). */
export const employeeListCache = { size: () => pageCache.size, clear: () => pageCache.clear() };

/**
 * The smallest string greater than every string that starts with `prefix`
 * (SQLite compares UTF-8 bytes, i.e. code points), or null when there is
 * none: trailing U+10FFFF cannot be bumped, so they go and the code point
 * before them is bumped instead, skipping the surrogates.
 */
function prefixUpperBound(prefix: string): string | null {
  const codes = Array.from(prefix, (char) => char.codePointAt(0)!);
  while (codes.length > 0 && codes[codes.length - 1] === 0x10ffff) codes.pop();
  const last = codes.pop();
  if (last === undefined) return null;
  const next = last + 1 === 0xd800 ? 0xe000 : last + 1;
  return String.fromCodePoint(...codes, next);
}

/** GET /employees/{id}: one employee of the company as a Person, or a 404 refusal. */
export async function getEmployee(
  deps: Deps,
  companyId: number,
  personId: number,
  scansInObject?: boolean,
): Promise<Answer<{ person: PersonBody }>> {
  const person = await loadPerson(deps, companyId, personId, scansInObject);
  return person ? { ok: true, person } : refusal(404, `employee ${personId} does not exist`);
}
