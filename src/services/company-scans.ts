import { and, eq } from "drizzle-orm";
import { companies, memberships, movedExposures } from "../db/schema";
import { inList } from "../db/sql";
import { companyOfExposure, type ScanRunEvent, type SiteRow } from "../domain/company-scans";
import { logError } from "../lib/log";
import { forwardCompanyEvents } from "./company-events";
import { forgetLeavers } from "./company-forgets";
import { confirmRemoval } from "./exposures";
import type { Deps } from "./deps";

/**
 * The scan side of companies whose scans live in their own object (D1's
 * `companies.scans_in_object`, docs/architecture.md, "The Company object"):
 * where a run's events go, and the calls to the objects. D1's own path
 * (services/scans.ts) keeps the people of companies still served from D1.
 */

/** The memberships of a run's people with where each company's scan side lives: one statement of the run's reads. */
export const homesQuery = (db: Deps["db"], personIds: number[]) =>
  db
    .select({ personId: memberships.personId, companyId: memberships.companyId, inObject: companies.scansInObject })
    .from(memberships)
    .innerJoin(companies, eq(companies.id, memberships.companyId))
    .where(inList(memberships.personId, personIds));

/** Where each person's scans go: D1 (a company of theirs is served from D1, or they have none), and the objects. */
export type Homes = { inD1: (personId: number) => boolean; objects: Map<number, Set<number>> };

export function homesOf(rows: { personId: number; companyId: number; inObject: boolean }[]): Homes {
  const member = new Set<number>();
  const d1 = new Set<number>();
  const objects = new Map<number, Set<number>>();
  for (const row of rows) {
    member.add(row.personId);
    if (!row.inObject) d1.add(row.personId);
    else objects.set(row.companyId, (objects.get(row.companyId) ?? new Set()).add(row.personId));
  }
  return { inD1: (personId) => !member.has(personId) || d1.has(personId), objects };
}

/**
 * Applies a run in each object-homed company of its people: each company's object is given its
 * members' events (in order) and the sites they name, then its events are recorded in D1. Returns
 * each event's outcome by its index in `run` (the first company's, in id order); events of no
 * such company are absent.
 */
export async function applyInObjects(
  deps: Deps,
  run: ScanRunEvent[],
  homes: Homes,
  sites: Map<number, SiteRow>,
): Promise<Map<number, string>> {
  const outcomes = new Map<number, string>();
  const companyIds = [...homes.objects.keys()].sort((a, b) => a - b);
  const answers = await Promise.all(
    companyIds.map(async (companyId) => {
      const members = homes.objects.get(companyId)!;
      const indexes = run.flatMap((event, i) => (members.has(event.person_id) ? [i] : []));
      if (indexes.length === 0) return { indexes, applied: [] };
      const events = indexes.map((i) => run[i]!);
      const named = new Set(events.flatMap((event) => ("site_id" in event ? [event.site_id] : [])));
      const applied = await deps.companyObjects.of(companyId).applyScanRun(
        companyId,
        events,
        [...sites.values()].filter((site) => named.has(site.id)),
      );
      // The memberships were read before the call: a member removed since is forgotten again.
      await forgetLeavers(deps, companyId, [...members]);
      await forwardQuietly(deps, companyId);
      return { indexes, applied };
    }),
  );
  for (const { indexes, applied } of answers)
    indexes.forEach((index, i) => {
      if (!outcomes.has(index)) outcomes.set(index, applied[i]!);
    });
  return outcomes;
}

/** A removal confirmed for an exposure of a company's object (the id names it, `companyOfExposure`). */
export async function confirmInObject(deps: Deps, companyId: number, exposureId: number, at: Date) {
  const outcome = await deps.companyObjects.of(companyId).confirmRemoval(exposureId, at);
  if (outcome === "closed") await forwardQuietly(deps, companyId);
  return outcome;
}

/** An exposure with a D1 id that the operator's move copied into a company's object (services/company-scan-moves.ts). */
export type MovedExposure = { exposureId: number; companyId: number };

/**
 * The objects holding a moved copy of these D1 exposure ids (`moved_exposures`), of companies
 * served from their object: where a `removal_confirmed` of such an id goes besides D1.
 */
export const movedQuery = (db: Deps["db"], exposureIds: number[]) =>
  db
    .select({ exposureId: movedExposures.exposureId, companyId: movedExposures.companyId })
    .from(movedExposures)
    .innerJoin(companies, eq(companies.id, movedExposures.companyId))
    .where(and(inList(movedExposures.exposureId, exposureIds), eq(companies.scansInObject, true)));

/**
 * A removal confirmed for a D1 id: D1's own row (a person still in a company served from D1 keeps
 * it), and each copy the move carried into a company's object. "closed" when any closed.
 */
export async function confirmD1Id(deps: Deps, exposureId: number, at: Date): Promise<ConfirmOutcome> {
  const outcomes = [await confirmRemoval(deps, exposureId, at)];
  for (const { companyId } of await movedQuery(deps.db, [exposureId]))
    outcomes.push(await confirmInObject(deps, companyId, exposureId, at));
  return (["closed", "unchanged"] as const).find((outcome) => outcomes.includes(outcome)) ?? "missing";
}

type ConfirmOutcome = "closed" | "unchanged" | "missing";

/**
 * Which of `ids` are exposures of companies' objects (each asked of the object its id names, or,
 * for a D1 id the move carried over, of the objects `moved` names). Only the objects of
 * `companies` (those whose scan side is in their object) are asked: a question about an id of no
 * such company creates no object.
 */
export async function knownInObjects(
  deps: Deps,
  ids: number[],
  companies: Set<number>,
  moved: MovedExposure[] = [],
): Promise<number[]> {
  const byCompany = new Map<number, number[]>();
  const ask = (companyId: number, id: number) => byCompany.set(companyId, [...(byCompany.get(companyId) ?? []), id]);
  for (const id of ids) {
    const companyId = companyOfExposure(id);
    if (companyId !== null && companies.has(companyId)) ask(companyId, id);
  }
  for (const { exposureId, companyId } of moved) ask(companyId, exposureId);
  const known = await Promise.all(
    [...byCompany].map(([companyId, list]) => deps.companyObjects.of(companyId).knownExposures(list)),
  );
  return known.flat();
}

/**
 * Records the object's events in D1 right after its change. The change is made: a failure here is
 * logged and left to the object's alarm (the `company-events` message), not retried with the change.
 */
async function forwardQuietly(deps: Deps, companyId: number) {
  try {
    const { more } = await forwardCompanyEvents(deps, companyId);
    if (more) await deps.backgroundQueue.send({ kind: "company-events", companyId });
  } catch (err) {
    logError("recording a company object's events failed; its alarm asks again", err, { companyId });
  }
}
