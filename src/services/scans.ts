import { and, eq, inArray, isNull, lt, or, sql } from "drizzle-orm";
import { companies, exposureHistory, exposures, people, scanResults, scans } from "../db/schema";
import { ApiError, badRequest } from "../lib/errors";
import type { ScanEvent } from "../domain/scan-events";
import { companyOfExposure, type SiteRow } from "../domain/company-scans";
import { historyPrefix, RESULT_EVENTS, scanEventPayload, toExposure } from "../domain/scan-payloads";
import { inList } from "../db/sql";
import { WriteBatch } from "./outbox";
import type { Deps } from "./deps";
import { siteColumns } from "./exposures";
import {
  applyInObjects,
  confirmD1Id,
  confirmInObject,
  homesOf,
  homesQuery,
  knownInObjects,
  movedQuery,
} from "./company-scans";

/**
 * Scan events (docs/decisions.md "Scans enter"): validated and enqueued by
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
export async function missingReferences(deps: Deps, events: ScanEvent[]): Promise<string[]> {
  const { db } = deps;
  const personIds = new Set<number>();
  const siteIds = new Set<number>();
  const exposureIds = new Set<number>();
  for (const event of events) {
    if (event.type === "removal_confirmed") exposureIds.add(event.exposure_id);
    else personIds.add(event.person_id);
    if ("site_id" in event) siteIds.add(event.site_id);
  }
  // An exposure of a company's object names its company (asked of the object); D1's own ids are asked
  // of D1, and of the objects the move carried them into.
  const inD1 = [...exposureIds].filter((id) => companyOfExposure(id) === null);
  const companyIds = new Set([...siteIds, ...[...exposureIds].flatMap((id) => companyOfExposure(id) ?? [])]);
  // At most 100 events, so each `in (…)` stays within D1's 100 bound parameters.
  const [knownPeople, knownCompanies, knownExposures, moved] = await Promise.all([
    personIds.size
      ? db
          .select({ id: people.id })
          .from(people)
          .where(inArray(people.id, [...personIds]))
      : [],
    companyIds.size
      ? db
          .select({ id: companies.id, kind: companies.kind, inObject: companies.scansInObject })
          .from(companies)
          .where(inArray(companies.id, [...companyIds]))
      : [],
    inD1.length ? db.select({ id: exposures.id }).from(exposures).where(inArray(exposures.id, inD1)) : [],
    // A D1 id may name an exposure the operator's move carried into a company's object.
    inD1.length ? movedQuery(db, inD1) : [],
  ]);
  const peopleFound = new Set(knownPeople.map((row) => row.id));
  const sitesFound = new Set(knownCompanies.filter((row) => row.kind === "site").map((row) => row.id));
  const objectHomed = new Set(knownCompanies.filter((row) => row.inObject && row.kind !== "site").map((row) => row.id));
  const inObjects = await knownInObjects(deps, [...exposureIds], objectHomed, moved);
  const exposuresFound = new Set([...knownExposures.map((row) => row.id), ...inObjects]);

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
 * Events per queue message: the consumer applies a message in one
 * invocation, whose D1 queries are limited, so a message stays small.
 */
export const MAX_EVENTS_PER_MESSAGE = 25;

/**
 * Splits a batch into queue messages: the fewest consecutive slices of at
 * most `MAX_EVENTS_PER_MESSAGE` events under the message size limit.
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
    if (current.length === MAX_EVENTS_PER_MESSAGE || (current.length > 0 && bytes + sizes[i]! > MAX_MESSAGE_BYTES)) {
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

/**
 * `POST /internal/scan-events`: a 400 naming every reference that does not
 * exist, a 413 for an event no queue message can hold; otherwise the batch,
 * as it was posted (`posted`; the consumer validates it again), goes on the
 * `scan-events` queue in slices (`packMessages`). Returns the events accepted.
 */
export async function enqueueScanEvents(deps: Deps, events: ScanEvent[], posted: unknown[]): Promise<number> {
  const problems = await missingReferences(deps, events);
  if (problems.length > 0) throw badRequest(`invalid body: ${problems.join("; ")}`);
  const packed = packMessages(posted);
  if ("tooLarge" in packed) {
    throw new ApiError(413, `event [${packed.tooLarge}] is larger than a queue message can hold (120 kB)`);
  }
  for (const message of packed.messages) await deps.scanQueue.send(message);
  return events.length;
}

/**
 * Applies the events of one queue message, in order; returns what happened
 * to each, for the consumer's log line. A message is at most 100 events (25
 * from the intake), and the Worker may run few D1 queries per invocation,
 * so runs of scan events are applied together (`applyRun`): one batch of
 * reads, then one atomic batch of the changes and their events. A
 * `removal_confirmed` is applied on its own, in its place.
 */
export async function applyScanEvents(deps: Deps, events: ScanEvent[]): Promise<string[]> {
  const outcomes: string[] = [];
  let run: RunEvent[] = [];
  const flush = async () => {
    if (run.length > 0) outcomes.push(...(await applyRun(deps, run)));
    run = [];
  };
  for (const event of events) {
    if (event.type !== "removal_confirmed") {
      run.push(event);
      continue;
    }
    await flush();
    const companyId = companyOfExposure(event.exposure_id);
    outcomes.push(
      companyId === null
        ? await confirmD1Id(deps, event.exposure_id, event.at)
        : await confirmInObject(deps, companyId, event.exposure_id, event.at),
    );
  }
  await flush();
  return outcomes;
}

type ProgressEvent = Extract<ScanEvent, { type: "started" | "completed" }>;
type ResultEvent = Extract<ScanEvent, { type: "found" | "not_found" | "failed" }>;
type RunEvent = ProgressEvent | ResultEvent;

/** A listing: the same person, site and `url` (null included) is the same listing. */
const listingKey = (personId: number, siteId: number, url: string | null) => JSON.stringify([personId, siteId, url]);
const resultKey = (scanId: string, siteId: number) => JSON.stringify([scanId, siteId]);

/**
 * One event's share of the run: it adds its statements and events to the
 * run's batch, and says from the results what became of it.
 */
type Step = (results: unknown[]) => string;

const done =
  (outcome: string): Step =>
  () =>
    outcome;

/**
 * Applies consecutive scan events as one command. Everything they depend on
 * is read first in one batch: the people and sites named, the results
 * already recorded for their (scan, site), the open exposures of their
 * people on their sites. Then the changes and their events are written in
 * one atomic batch; each event row is guarded by the change before it
 * (`ifChanged`), so it exists exactly when its change happened.
 *
 * Every change is applied at most once, so a redelivered message changes
 * nothing twice and sends no webhook twice: scans move only from "not yet"
 * (`started_at`/`completed_at` null, decided in SQL by the upsert), results
 * are unique per (scan, site), and one open exposure per listing is a unique
 * index. Events earlier in the run count as applied for the later ones (a
 * listing found twice opens one exposure).
 */
async function applyRun(deps: Deps, events: RunEvent[]): Promise<string[]> {
  const { db } = deps;
  const results = events.filter((event): event is ResultEvent => "site_id" in event);
  const personIds = [...new Set(events.map((event) => event.person_id))];
  const siteIds = [...new Set(results.map((event) => event.site_id))];
  const [knownPeople, knownSites, recorded, open, memberOf] = await db.batch([
    db.select({ id: people.id }).from(people).where(inList(people.id, personIds)),
    db
      .select(siteColumns)
      .from(companies)
      .where(and(inList(companies.id, siteIds), eq(companies.kind, "site"))),
    db
      .select({ scanId: scanResults.scanId, siteId: scanResults.siteId })
      .from(scanResults)
      .where(inList(scanResults.scanId, [...new Set(results.map((event) => event.scan_id))])),
    db
      .select({ personId: exposures.personId, siteId: exposures.siteId, url: exposures.url })
      .from(exposures)
      .where(
        and(
          inList(exposures.personId, personIds),
          inList(exposures.siteId, siteIds),
          inArray(exposures.status, ["pending", "in_progress"]),
        ),
      ),
    homesQuery(db, personIds),
  ]);
  const homes = homesOf(memberOf);

  const batch = new WriteBatch(deps);
  const state: RunState = {
    batch,
    people: new Set(knownPeople.map((row) => row.id)),
    sites: new Map(knownSites.map((site) => [site.id, site])),
    recorded: new Set(recorded.map((row) => resultKey(row.scanId, row.siteId))),
    open: new Set(open.map((row) => listingKey(row.personId, row.siteId, row.url))),
  };
  // D1 applies the events of its people (of a company served from D1, or of none); each company whose
  // scan side is in its object applies its members' (below). D1 keeps every person's `last_scan_at`.
  const steps = events.map((event): Step | null => {
    if (!state.people.has(event.person_id)) return done("skipped: person does not exist");
    if (!homes.inD1(event.person_id)) {
      if (event.type === "completed") lastScan(batch, event);
      return null;
    }
    switch (event.type) {
      case "started":
      case "completed":
        return progressStep(state, event);
      default:
        return resultStep(state, event);
    }
  });
  const { results: written } = await batch.commit();
  const inD1 = steps.map((step) => step?.(written));
  // Memberships were read with the people: a person removed since has none, and no object is asked.
  const inObjects = await applyInObjects(deps, events, homes, state.sites);
  return inD1.map((outcome, i) => outcome ?? inObjects.get(i) ?? "skipped: person does not exist");
}

type RunState = {
  batch: WriteBatch;
  people: Set<number>;
  sites: Map<number, SiteRow>;
  /** (scan, site) pairs recorded, before or earlier in the run. */
  recorded: Set<string>;
  /** Open (pending or in progress) listings, before or earlier in the run. */
  open: Set<string>;
};

/**
 * The first `started` of a scan records its start, the first `completed`
 * completes it and moves the person's `last_scan_at` forward; a repeat
 * changes nothing and emits nothing. A scan id always stays with its person.
 */
function progressStep({ batch }: RunState, event: ProgressEvent): Step {
  const { db } = batch.deps;
  const { now } = batch;
  const started = event.type === "started";
  const column = started ? scans.startedAt : scans.completedAt;
  const moment = started ? { startedAt: event.at } : { status: "completed" as const, completedAt: event.at };
  const changed = batch.add(
    db
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
      .returning({ id: scans.id }),
  );
  batch.emit([{ personId: event.person_id, event: `scan:${event.type}`, payload: scanEventPayload(event) }], {
    ifChanged: true,
  });
  if (!started) lastScan(batch, event);
  return (results) => ((results[changed] as unknown[]).length === 0 ? "unchanged" : event.type);
}

/**
 * A completed scan moves the person's `last_scan_at` forward (D1 keeps it whichever store holds the
 * scan): idempotent on its own (only ever forward); `updated_at` of the person is about their data,
 * which a scan does not change.
 */
function lastScan(batch: WriteBatch, event: ProgressEvent) {
  const { db } = batch.deps;
  batch.add(
    db
      .update(people)
      .set({ lastScanAt: event.at, updatedAt: sql`${people.updatedAt}` })
      .where(and(eq(people.id, event.person_id), or(isNull(people.lastScanAt), lt(people.lastScanAt, event.at)))),
  );
}

/** The id of the exposure inserted just before, in the same batch (ids only grow: AUTOINCREMENT). */
const insertedExposureId = sql`(select max(${exposures.id}) from ${exposures})`;

/**
 * One site's outcome of a scan, recorded once per (scan, site). A `found`
 * creates a `pending` exposure unless the person already has an open one
 * (pending or in progress) for the same listing on that site. Without ON
 * CONFLICT: if a concurrent delivery recorded this result (or opened this
 * listing, a unique index) first, the whole batch fails and the message is
 * retried, then seen as applied.
 */
function resultStep(state: RunState, event: ResultEvent): Step {
  const { batch } = state;
  const { db } = batch.deps;
  const { now } = batch;
  const key = resultKey(event.scan_id, event.site_id);
  if (state.recorded.has(key)) return done("unchanged");
  const site = state.sites.get(event.site_id);
  if (!site) return done("skipped: not a people-search site");
  state.recorded.add(key);

  const url = event.url ?? null;
  const data = event.data ?? {};
  batch.add(
    db.insert(scanResults).values({
      scanId: event.scan_id,
      personId: event.person_id,
      siteId: event.site_id,
      outcome: event.type,
      url,
      data: event.data ?? null,
      at: event.at,
      createdAt: now,
    }),
  );
  const payload = scanEventPayload(event, site, event.type === "found" ? { url, data } : undefined);
  batch.emit([{ personId: event.person_id, event: RESULT_EVENTS[event.type], payload }]);
  const listing = listingKey(event.person_id, event.site_id, url);
  if (event.type !== "found" || state.open.has(listing)) return done(event.type);
  state.open.add(listing);
  batch.add(
    db.insert(exposures).values({
      personId: event.person_id,
      siteId: event.site_id,
      status: "pending",
      url,
      data,
      createdAt: now,
      updatedAt: now,
    }),
  );
  const exposure = toExposure({
    id: 0,
    personId: event.person_id,
    status: "pending",
    url,
    data,
    createdAt: now,
    updatedAt: now,
    site,
  });
  batch.emit([{ personId: event.person_id, event: "exposure:created", payload: exposure }], {
    setId: insertedExposureId,
  });
  batch.add(
    db.insert(exposureHistory).values({
      exposureId: insertedExposureId,
      siteId: event.site_id,
      event: historyPrefix.found + site.name,
      createdAt: event.at,
    }),
  );
  return done("found: exposure created");
}
