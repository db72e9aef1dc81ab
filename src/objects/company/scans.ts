import { and, asc, eq, inArray, isNull, lte, sql } from "drizzle-orm";
import type { DrizzleSqliteDODatabase } from "drizzle-orm/durable-sqlite";
import { exposureIdBase, type CompanyEvent, type ScanRunEvent, type SiteRow } from "../../domain/company-scans";
import type { EventName } from "../../domain/events";
import {
  historyPrefix,
  RESULT_EVENTS,
  scanEventPayload,
  toExposure,
  toExposureFromText,
} from "../../domain/scan-payloads";
import { countStatusChange, itemColumns, toItem, type ItemRow } from "./exposures";
import { counters, events, exposureHistory, exposures, scanResults, scans, sites } from "./schema";

/*
 * The write side of the company's scans (docs/architecture.md, "The Company object"): a run of
 * scan events of its employees, and a site's confirmation of a removal, each in one transaction
 * with its history lines and the webhook events it raises (the `events` outbox, which the Worker
 * records in D1 as deliveries, then acknowledges: services/company-events.ts). The same semantics
 * as D1's path (services/scans.ts): scans move only from "not yet", a result is recorded once per
 * (scan, site), a `found` opens a `pending` exposure unless the same listing is open; events
 * earlier in the run count for the later ones.
 */

type Db = DrizzleSqliteDODatabase;
export type Tx = Parameters<Parameters<Db["transaction"]>[0]>[0];
type ProgressEvent = Extract<ScanRunEvent, { type: "started" | "completed" }>;
type ResultEvent = Extract<ScanRunEvent, { type: "found" | "not_found" | "failed" }>;
type Raise = (event: EventName, payload: unknown) => void;

/** The counter of the company's exposure numbers (`exposureIdBase(company) + n`, never reused). */
const EXPOSURE_COUNTER = "exposure";
/** The company this object is, remembered from its first run (the alarm names it to the Worker). */
const COMPANY_COUNTER = "company";

/** The events' writer of one transaction: each event a row of the outbox, in the order raised. */
export const raiser =
  (tx: Tx, now: Date): Raise =>
  (event, payload) =>
    tx
      .insert(events)
      .values({ event, payload: JSON.stringify(payload), createdAt: now })
      .run();

/**
 * Applies a run of scan events of the company's employees, in order, in one transaction; the
 * sites the run names are kept (as D1 showed them). Returns what happened to each event.
 */
export function applyRun(db: Db, companyId: number, run: ScanRunEvent[], siteRows: SiteRow[], now: Date): string[] {
  return db.transaction((tx) => {
    claimCompany(tx, companyId);
    keepSites(tx, siteRows);
    const named = new Map(siteRows.map((site) => [site.id, site]));
    const raise = raiser(tx, now);
    return run.map((event) =>
      "site_id" in event
        ? result(tx, companyId, event, named.get(event.site_id), now, raise)
        : progress(tx, event, now, raise),
    );
  });
}

/** The object is `companyId`'s, remembered the first time (its ids are minted from its company's): never another's. */
export function claimCompany(tx: Tx, companyId: number) {
  tx.insert(counters).values({ name: COMPANY_COUNTER, value: companyId }).onConflictDoNothing().run();
  const known = companyOf(tx);
  if (known !== companyId) throw new Error(`company ${companyId} asked the object of company ${known}`);
}

/** Keeps the sites as D1 showed them last. */
export function keepSites(tx: Tx, siteRows: SiteRow[]) {
  for (const site of siteRows) {
    const { id: _id, ...shown } = site;
    tx.insert(sites).values(site).onConflictDoUpdate({ target: sites.id, set: shown }).run();
  }
}

/** The first `started` of a scan records its start, the first `completed` completes it; a scan id stays with its person. */
function progress(tx: Tx, event: ProgressEvent, now: Date, raise: Raise): string {
  const started = event.type === "started";
  const column = started ? scans.startedAt : scans.completedAt;
  const moment = started ? { startedAt: event.at } : { status: "completed" as const, completedAt: event.at };
  const changed = tx
    .insert(scans)
    .values({
      id: event.scan_id,
      personId: event.person_id,
      status: event.type,
      ...moment,
      createdAt: now,
      updatedAt: now,
    })
    .onConflictDoUpdate({
      target: scans.id,
      set: { ...moment, updatedAt: now },
      setWhere: and(isNull(column), eq(scans.personId, event.person_id)),
    })
    .returning({ id: scans.id })
    .all();
  if (changed.length === 0) return "unchanged";
  raise(`scan:${event.type}`, scanEventPayload(event));
  return event.type;
}

/** One site's outcome of a scan, once per (scan, site); a `found` opens the listing's exposure unless it is open. */
function result(
  tx: Tx,
  companyId: number,
  event: ResultEvent,
  site: SiteRow | undefined,
  now: Date,
  raise: Raise,
): string {
  const recorded = tx
    .select({ id: scanResults.id })
    .from(scanResults)
    .where(and(eq(scanResults.scanId, event.scan_id), eq(scanResults.siteId, event.site_id)))
    .get();
  if (recorded) return "unchanged";
  if (!site) return "skipped: not a people-search site";
  const url = event.url ?? null;
  const data = event.data ?? {};
  tx.insert(scanResults)
    .values({
      scanId: event.scan_id,
      personId: event.person_id,
      siteId: event.site_id,
      outcome: event.type,
      url,
      data: event.data ? JSON.stringify(event.data) : null,
      at: event.at,
      createdAt: now,
    })
    .run();
  raise(RESULT_EVENTS[event.type], scanEventPayload(event, site, event.type === "found" ? { url, data } : undefined));
  if (event.type !== "found") return event.type;

  // A listing: the same person, site and `url` (null included); open while pending or in progress.
  const open = tx
    .select({ id: exposures.id })
    .from(exposures)
    .where(
      and(
        eq(exposures.personId, event.person_id),
        inArray(exposures.status, ["pending", "in_progress"]),
        eq(exposures.siteId, event.site_id),
        url === null ? isNull(exposures.url) : eq(exposures.url, url),
      ),
    )
    .get();
  if (open) return event.type;
  const id = nextExposureId(tx, companyId);
  tx.insert(exposures)
    .values({
      id,
      personId: event.person_id,
      siteId: event.site_id,
      status: "pending",
      url,
      data: JSON.stringify(data),
      createdAt: now,
      updatedAt: now,
    })
    .run();
  countStatusChange(tx, null, "pending");
  tx.insert(exposureHistory)
    .values({ exposureId: id, siteId: event.site_id, event: historyPrefix.found + site.name, createdAt: event.at })
    .run();
  const exposure = { id, personId: event.person_id, status: "pending" as const, url, data, site };
  raise("exposure:created", toExposure({ ...exposure, createdAt: now, updatedAt: now }));
  return "found: exposure created";
}

/** The next exposure id of the company: its counter moves first, so a number is never handed out twice. */
function nextExposureId(tx: Tx, companyId: number): number {
  const row = tx
    .insert(counters)
    .values({ name: EXPOSURE_COUNTER, value: 1 })
    .onConflictDoUpdate({ target: counters.name, set: { value: sql`${counters.value} + 1` } })
    .returning({ value: counters.value })
    .get();
  return exposureIdBase(companyId) + row!.value;
}

/**
 * A site confirmed the removal: an `in_progress` exposure moves to `closed`, with its history line
 * and `exposure:closed` + `request:closed`. Any other state is left alone.
 */
export function confirmRemoval(db: Db, exposureId: number, at: Date, now: Date): "closed" | "unchanged" | "missing" {
  return db.transaction((tx) => {
    const found = tx.get<ItemRow>(
      sql`select ${itemColumns} from exposures e join sites s on s.id = e.site_id where e.id = ${exposureId}`,
    );
    if (!found) return "missing";
    const row = toItem(found);
    if (row.status !== "in_progress") return "unchanged";
    tx.update(exposures)
      .set({ status: "closed", closedAt: at, updatedAt: now })
      .where(and(eq(exposures.id, exposureId), eq(exposures.status, "in_progress")))
      .run();
    countStatusChange(tx, "in_progress", "closed");
    tx.insert(exposureHistory)
      .values({ exposureId, siteId: row.site.id, event: historyPrefix.closed + row.site.name, createdAt: at })
      .run();
    const exposure = toExposureFromText({ ...row, status: "closed", updatedAt: now });
    const raise = raiser(tx, now);
    raise("exposure:closed", exposure);
    raise("request:closed", exposure);
    return "closed";
  });
}

/** The oldest events of the outbox, at most `limit`, and no more once `maxBytes` of payload are taken (one at least). */
export function takeEvents(db: Db, limit: number, maxBytes: number): CompanyEvent[] {
  const rows = db
    .select({ seq: events.seq, event: events.event, payload: events.payload, at: events.createdAt })
    .from(events)
    .orderBy(asc(events.seq))
    .limit(limit)
    .all();
  const taken: CompanyEvent[] = [];
  let bytes = 0;
  for (const row of rows) {
    if (taken.length > 0 && bytes >= maxBytes) break;
    taken.push({ ...row, event: row.event as EventName, at: row.at.getTime() });
    bytes += row.payload.length;
  }
  return taken;
}

/** The Worker recorded the events up to `upToSeq` in D1: they leave the outbox. */
export function ackEvents(db: Db, upToSeq: number) {
  db.delete(events).where(lte(events.seq, upToSeq)).run();
}

/** The oldest event still in the outbox: its number and when it was raised (ms); null when it is empty. */
export function oldestEvent(db: Db): { seq: number; at: number } | null {
  const row = db.select({ seq: events.seq, at: events.createdAt }).from(events).orderBy(asc(events.seq)).limit(1).get();
  return row ? { seq: row.seq, at: row.at.getTime() } : null;
}

/** The company this object is, once a run told it; null before. */
export function companyOf(db: Db | Tx): number | null {
  return (
    db.select({ value: counters.value }).from(counters).where(eq(counters.name, COMPANY_COUNTER)).get()?.value ?? null
  );
}

/** Which of `ids` are exposures of the company. */
export function knownExposures(db: Db, ids: number[]): number[] {
  if (ids.length === 0) return [];
  return db
    .select({ id: exposures.id })
    .from(exposures)
    .where(sql`${exposures.id} in (select value from json_each(${JSON.stringify(ids)}))`)
    .all()
    .map((row) => row.id);
}
