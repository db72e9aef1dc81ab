import { z } from "@hono/zod-openapi";
import { IdSchema } from "../lib/ids";
import { QueryTimestamp } from "../lib/time";

/**
 * The scanner's events (docs/decisions.md, "Scans enter"): validated at
 * intake (`POST /internal/scan-events`, whose schemas name these shapes in
 * the OpenAPI document) and again by the `scan-events` consumer and the
 * dead-letter redrive, then applied by services/scans.ts.
 */

const At = QueryTimestamp.openapi({ description: "When it happened (ISO 8601 with an offset)" });
const ScanId = z
  .string()
  .trim()
  .min(1)
  .max(128)
  .openapi({ description: "The scanner's scan id", example: "scan-7f3a" });

export const ScanProgressEvent = z.object({
  type: z.enum(["started", "completed"]),
  scan_id: ScanId,
  person_id: IdSchema,
  at: At,
});

export const ScanResultEvent = z.object({
  type: z.enum(["found", "not_found", "failed"]),
  scan_id: ScanId,
  person_id: IdSchema,
  site_id: IdSchema.openapi({ description: "The people-search site scanned" }),
  url: z
    .url({ protocol: /^https?$/, error: "must be an http(s) URL" })
    .max(2048)
    .optional()
    .openapi({ description: "The listing found", example: "https://peoplefinder.example/p/alice-admin" }),
  data: z
    .record(z.string(), z.unknown())
    .optional()
    .openapi({ description: "What the scan found", example: { name: "Alice Admin", city: "San Francisco" } }),
  at: At,
});

export const RemovalConfirmedEvent = z.object({
  type: z.literal("removal_confirmed"),
  exposure_id: IdSchema,
  at: At,
});

export const ScanEventSchema = z.discriminatedUnion("type", [
  ScanProgressEvent,
  ScanResultEvent,
  RemovalConfirmedEvent,
]);

export type ScanEvent = z.output<typeof ScanEventSchema>;

/** Events in one posted batch, and in one queue message at most. */
export const MAX_SCAN_EVENTS = 100;

/** A posted batch and a queue message's body: a bare array of 1–100 events, applied in order. */
export const ScanEventBatch = z.array(ScanEventSchema).min(1).max(MAX_SCAN_EVENTS);
