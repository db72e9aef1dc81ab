import type { ExposureCounts } from "../domain/company-scans";
import type { Deps } from "./deps";

/*
 * The `exposures` object of a Person (services/people.ts): counts by status and the sites not
 * found, rendered from D1's rows, or, for a company whose scan side lives in its object
 * (`companies.scans_in_object`), left as a mark in the rendering and filled from the object.
 */

/** The Person's `exposures` object as JSON text. */
export function exposuresJson(rows: { status: "pending" | "in_progress" | "closed"; n: number }[], notFound: number) {
  const counts = { pending: 0, in_progress: 0, closed: 0 };
  for (const row of rows) counts[row.status] = row.n;
  return (
    `{"total":${counts.pending + counts.in_progress + counts.closed},"pending":${counts.pending},` +
    `"in_progress":${counts.in_progress},"closed":${counts.closed},"not_found":${notFound}}`
  );
}

/**
 * Where a rendered Person's exposure counts go when the company's object keeps them: NUL never
 * appears raw in JSON text (a string's NUL is escaped), so the mark cannot be part of a value.
 */
const NUL = "\u0000";
export const exposureMark = (personId: number) => `${NUL}${personId}${NUL}`;

/** The ids of the Persons whose counts a rendering left to fill (split at the marks: every odd part is an id). */
export const markedPeople = (rendered: string): number[] =>
  rendered.split(NUL).flatMap((part, i) => (i % 2 === 1 ? [Number(part)] : []));

/** Fills a rendering's marks with the counts the company's object gave (a person it has nothing of: zeros). */
export function fillExposureCounts(rendered: string, counts: ExposureCounts[]): string {
  const of = new Map(counts.map((row) => [row.personId, row]));
  const parts = rendered.split(NUL);
  return parts.map((part, i) => (i % 2 === 1 ? countsJson(of.get(Number(part))) : part)).join("");
}

const countsJson = (row: ExposureCounts | undefined): string =>
  exposuresJson(
    row
      ? [
          { status: "pending", n: row.pending },
          { status: "in_progress", n: row.in_progress },
          { status: "closed", n: row.closed },
        ]
      : [],
    row?.notFound ?? 0,
  );

/** The counts of the people `rendered` marks, from the company's object (no RPC when there are none). */
export async function objectExposureCounts(deps: Deps, companyId: number, rendered: string): Promise<string> {
  const ids = markedPeople(rendered);
  if (ids.length === 0) return rendered;
  return fillExposureCounts(rendered, await deps.companyObjects.of(companyId).exposureCounts(ids));
}
