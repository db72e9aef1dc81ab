import { z } from "@hono/zod-openapi";

/** Wire form of a timestamp: ISO 8601 UTC with `Z`; null stays null. */
/** A day in milliseconds (UTC days: no daylight saving). */
export const DAY_MS = 24 * 3600 * 1000;

/**
 * Whether a token's use at `now` is its first of the UTC day, as `last_used_on` shows days: the one
 * rule of when a use is recorded (the person's object, D1's bookkeeping).
 */
export const firstUseOfDay = (lastUsedAt: number | null, now: number) =>
  lastUsedAt === null || utcDay(lastUsedAt) < utcDay(now);

/** Days since 1970-01-01 in UTC: the key of the daily counters, and the day a use is recorded for. */
export const utcDay = (ms: number) => Math.floor(ms / DAY_MS);

export const iso = (date: Date | null | undefined): string | null => (date ? date.toISOString() : null);

/**
 * ISO 8601 spellings RFC 3339 (and so zod) does not take: minutes without
 * seconds (`12:00Z`), basic or hour-only offsets (`+0200`, `+02`), lowercase
 * `t`/`z`. They are rewritten to the RFC 3339 form before validation.
 */
const ISO_8601_LENIENT =
  /^(\d{4}-\d{2}-\d{2})[Tt](\d{2}:\d{2})(:\d{2}(?:\.\d+)?)?(?:([Zz])|([+-]\d{2})(?::?(\d{2}))?)$/;

function toRfc3339(value: unknown): unknown {
  if (typeof value !== "string") return value;
  const m = ISO_8601_LENIENT.exec(value.trim());
  if (!m) return value.trim();
  const [, date, hhmm, seconds = ":00", zulu, offsetHours, offsetMinutes = "00"] = m;
  return `${date}T${hhmm}${seconds}${zulu ? "Z" : `${offsetHours}:${offsetMinutes}`}`;
}

/**
 * A timestamp in a query string (docs/decisions.md): any ISO 8601 date-time with
 * an offset (`Z`, `+02:00`, `+0200`, `+02`; seconds optional), or a bare date
 * meaning midnight UTC. A date-time without an offset is refused: its instant
 * would be a guess.
 */
export const QueryTimestamp = z
  .preprocess(
    toRfc3339,
    z.union([z.iso.datetime({ offset: true }), z.iso.date()], {
      error: "must be an ISO 8601 timestamp with an offset (2026-01-31T12:00:00Z) or a date (2026-01-31)",
    }),
  )
  .transform((value) => new Date(value.length === 10 ? `${value}T00:00:00Z` : value))
  .openapi({ type: "string", format: "date-time", example: "2026-01-31T12:00:00Z" });

/** A calendar date `YYYY-MM-DD` that exists (no 2026-02-30). */
export const CalendarDate = z.iso
  .date({ error: (issue) => (issue.input === undefined ? "is required" : "must be a date written YYYY-MM-DD") })
  .openapi({ example: "1990-07-02" });
