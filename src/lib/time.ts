import { z } from "@hono/zod-openapi";

/** Wire form of a timestamp: ISO 8601 UTC with `Z`; null stays null. */
export const iso = (date: Date | null | undefined): string | null => (date ? date.toISOString() : null);

/**
 * A timestamp in a query string (DECISIONS §1): any ISO 8601 date-time with
 * an offset (`Z` or `+02:00`), or a bare date meaning midnight UTC.
 */
export const QueryTimestamp = z
  .union([z.iso.datetime({ offset: true }), z.iso.date()], {
    error: "must be an ISO 8601 timestamp with an offset (2026-01-31T12:00:00Z) or a date (2026-01-31)",
  })
  .transform((value) => new Date(value.length === 10 ? `${value}T00:00:00Z` : value))
  .openapi({ type: "string", format: "date-time", example: "2026-01-31T12:00:00Z" });

/** A calendar date `YYYY-MM-DD` that exists (no 2026-02-30). */
export const CalendarDate = z.iso
  .date({ error: "must be a date written YYYY-MM-DD" })
  .openapi({ example: "1990-07-02" });
