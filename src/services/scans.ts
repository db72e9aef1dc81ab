import { and, eq, inArray, isNull, lt, or, sql } from "drizzle-orm";
import type { Db } from "../db/client";
import { companies, exposureHistory, exposures, people, scanResults, scans } from "../db/schema";
import { iso } from "../lib/time";
import type { ScanEvent } from "../routes/scans/scans.schemas";
import { emitForPerson, type DeliveryMessage, type EventName } from "./events";
import { confirmRemoval, exposureQuery, historyPrefix, siteColumns, toExposure, toSite } from "./exposures";

/**
 * Scan events (DECISIONS §5 "Scans enter"): validated and enqueued by
 * `POST /internal/scan-events`, applied here by the `scan-events` consumer.
 * Every event is applied at most once, so a redelivered message changes
 * nothing twice and sends no webhook twice: scans move only from "not yet"
 * (`started_at`/`completed_at` null), results are unique per (scan, site),
 * exposures move only from the state a move starts in.
 */

/**
 * The references of a batch that do not exist: unknown people, ids that are
 * not people-search sites, unknown exposures. One message per offending
 * field, naming the event's index; empty when all is well.
 */
export async function missingReferences(db: Db, events: ScanEvent[]): Promise<string[]> {
  const personIds = new Set<number>();
  const siteIds = new Set<number>();
  const exposureIds = new Set<number>();
  for (const event of events) {
    if (event.type === "removal_confirmed") exposureIds.add(event.exposure_id);
    else personIds.add(event.person_id);
    if ("site_id" in event) siteIds.add(event.site_id);
  }
  // At most 100 events, so each `in (…)` stays within D1's 100 bound parameters.
  const [knownPeople, knownSites, knownExposures] = await Promise.all([
    personIds.size
      ? db
          .select({ id: people.id })
          .from(people)
          .where(inArray(people.id, [...personIds]))
      : [],
    siteIds.size
      ? db
          .select({ id: companies.id, kind: companies.kind })
          .from(companies)
          .where(inArray(companies.id, [...siteIds]))
      : [],
    exposureIds.size
      ? db
          .select({ id: exposures.id })
          .from(exposures)
          .where(inArray(exposures.id, [...exposureIds]))
      : [],
  ]);
  const peopleFound = new Set(knownPeople.map((row) => row.id));
  const sitesFound = new Set(knownSites.filter((row) => row.kind === "site").map((row) => row.id));
  const exposuresFound = new Set(knownExposures.map((row) => row.id));

  const problems: string[] = [];
  events.forEach((event, i) => {
    if (event.type === "removal_confirmed") {
      if (!exposuresFound.has(event.exposure_id))
        problems.push(`\`[${i}].exposure_id\` exposure ${event.exposure_id} does not exist`);
      return;
    }
    if (!peopleFound.has(event.person_id))
      problems.push(`\`[${i}].person_id\` person ${event.person_id} does not exist`);
    if ("site_id" in event && !sitesFound.has(event.site_id))
      problems.push(`\`[${i}].site_id\` ${event.site_id} is not a people-search site`);
  });
  return problems;
}

/** Queue messages hold at most 128 KB (https://developers.cloudflare.com/queues/platform/limits/). */
export const MAX_MESSAGE_BYTES = 120_000;

/**
 * Splits a batch into queue messages: one message when it fits (the usual
 * case), else the fewest consecutive slices under the message size limit.
 * Returns the index of an event too large for any message instead.
 */
export function packMessages(events: unknown[]): { messages: unknown[][] } | { tooLarge: number } {
  const encoder = new TextEncoder();
  const sizes = events.map((event) => encoder.encode(JSON.stringify(event)).length + 1);
  const tooLarge = sizes.findIndex((size) => size > MAX_MESSAGE_BYTES);
  if (tooLarge >= 0) return { tooLarge };
  const messages: unknown[][] = [];
  let current: unknown[] = [];
  let bytes = 2;
  events.forEach((event, i) => {
    if (current.length > 0 && bytes + sizes[i]! > MAX_MESSAGE_BYTES) {
      messages.push(current);
      current = [];
      bytes = 2;
    }
    current.push(event);
    bytes += sizes[i]!;
  });
  messages.push(current);
  return { messages };
}

type Emit = (personId: number, event: EventName, payload: unknown) => Promise<unknown>;

/** Applies one event; returns what happened, for the consumer's log line. */
export async function applyScanEvent(db: Db, queue: Queue<DeliveryMessage>, event: ScanEvent): Promise<string> {
  const emit: Emit = (personId, name, payload) => emitForPerson(db, queue, personId, name, payload);
  switch (event.type) {
    case "started":
      return applyStarted(db, emit, event);
    case "completed":
      return applyCompleted(db, emit, event);
    case "removal_confirmed":
      return confirmRemoval(db, queue, event.exposure_id, event.at);
    default:
      return applyResult(db, emit, event);
  }
}

type ProgressEvent = Extract<ScanEvent, { type: "started" | "completed" }>;
type ResultEvent = Extract<ScanEvent, { type: "found" | "not_found" | "failed" }>;

const scanEventPayload = (event: ProgressEvent | ResultEvent, site?: Parameters<typeof toSite>[0]) => ({
  scan_id: event.scan_id,
  person_id: event.person_id,
  ...(site ? { site: toSite(site) } : {}),
  at: iso(event.at)!,
});

async function personExists(db: Db, personId: number) {
  return (await db.select({ id: people.id }).from(people).where(eq(people.id, personId)).get()) !== undefined;
}

/** First `started` for a scan records its start; a scan id always stays with its person. */
async function applyStarted(db: Db, emit: Emit, event: ProgressEvent) {
  if (!(await personExists(db, event.person_id))) return "skipped: person does not exist";
  const now = new Date();
  const changed = await db
    .insert(scans)
    .values({
      id: event.scan_id,
      personId: event.person_id,
      status: "started",
      startedAt: event.at,
      createdAt: now,
      updatedAt: now,
    })
    .onConflictDoUpdate({
      target: scans.id,
      set: { startedAt: event.at, updatedAt: now },
      setWhere: and(isNull(scans.startedAt), eq(scans.personId, event.person_id)),
    })
    .returning({ id: scans.id });
  if (changed.length === 0) return "unchanged";
  await emit(event.person_id, "scan:started", scanEventPayload(event));
  return "started";
}

/** First `completed` for a scan completes it and moves the person's `last_scan_at` forward. */
async function applyCompleted(db: Db, emit: Emit, event: ProgressEvent) {
  if (!(await personExists(db, event.person_id))) return "skipped: person does not exist";
  const now = new Date();
  const [changed] = await db.batch([
    db
      .insert(scans)
      .values({
        id: event.scan_id,
        personId: event.person_id,
        status: "completed",
        completedAt: event.at,
        createdAt: now,
        updatedAt: now,
      })
      .onConflictDoUpdate({
        target: scans.id,
        set: { status: "completed", completedAt: event.at, updatedAt: now },
        setWhere: and(isNull(scans.completedAt), eq(scans.personId, event.person_id)),
      })
      .returning({ id: scans.id }),
    // Idempotent on its own (only ever forward); `updated_at` of the person is
    // about their data, which a scan does not change.
    db
      .update(people)
      .set({ lastScanAt: event.at, updatedAt: sql`${people.updatedAt}` })
      .where(and(eq(people.id, event.person_id), or(isNull(people.lastScanAt), lt(people.lastScanAt, event.at)))),
  ]);
  if (changed.length === 0) return "unchanged";
  await emit(event.person_id, "scan:completed", scanEventPayload(event));
  return "completed";
}

const RESULT_EVENTS = { found: "scan:found", not_found: "scan:not_found", failed: "scan:failed" } as const;

/**
 * One site's outcome of a scan, recorded once per (scan, site). A `found`
 * creates a `pending` exposure unless the person already has an open one
 * (pending or in progress) for the same listing on that site.
 */
async function applyResult(db: Db, emit: Emit, event: ResultEvent) {
  const existing = await db
    .select({ id: scanResults.id })
    .from(scanResults)
    .where(and(eq(scanResults.scanId, event.scan_id), eq(scanResults.siteId, event.site_id)))
    .get();
  if (existing) return "unchanged";
  const site = await db
    .select(siteColumns)
    .from(companies)
    .where(and(eq(companies.id, event.site_id), eq(companies.kind, "site")))
    .get();
  if (!site) return "skipped: not a people-search site";
  if (!(await personExists(db, event.person_id))) return "skipped: person does not exist";

  const url = event.url ?? null;
  const data = event.data ?? {};
  const now = new Date();
  const recordResult = db.insert(scanResults).values({
    scanId: event.scan_id,
    personId: event.person_id,
    siteId: event.site_id,
    outcome: event.type,
    url,
    data: event.data ?? null,
    at: event.at,
    createdAt: now,
  });

  const open =
    event.type === "found"
      ? await exposureQuery(db)
          .where(
            and(
              eq(exposures.personId, event.person_id),
              eq(exposures.siteId, event.site_id),
              inArray(exposures.status, ["pending", "in_progress"]),
              url === null ? isNull(exposures.url) : eq(exposures.url, url),
            ),
          )
          .get()
      : undefined;

  let created: Parameters<typeof toExposure>[0] | null = null;
  if (event.type === "found" && !open) {
    // Without ON CONFLICT: if a concurrent delivery recorded this result first,
    // the whole batch fails and the message is retried, then seen as applied.
    const [, inserted] = await db.batch([
      recordResult,
      db
        .insert(exposures)
        .values({
          personId: event.person_id,
          siteId: event.site_id,
          status: "pending",
          url,
          data,
          createdAt: now,
          updatedAt: now,
        })
        .returning(),
      db.insert(exposureHistory).values({
        exposureId: sql`last_insert_rowid()`,
        siteId: event.site_id,
        event: historyPrefix.found + site.name,
        createdAt: event.at,
      }),
    ]);
    created = { ...inserted[0]!, site };
  } else {
    await recordResult;
  }

  const payload = scanEventPayload(event, site);
  await emit(event.person_id, RESULT_EVENTS[event.type], event.type === "found" ? { ...payload, url, data } : payload);
  if (created) await emit(event.person_id, "exposure:created", toExposure(created));
  return created ? "found: exposure created" : event.type;
}
