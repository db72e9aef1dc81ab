import { z } from "@hono/zod-openapi";
import { IdSchema } from "../../lib/ids";
import { QueryTimestamp } from "../../lib/time";

/** The scan events of docs/decisions.md, validated at intake and again by the queue consumer. */
const At = QueryTimestamp.openapi({ description: "When it happened (ISO 8601 with an offset)" });
const ScanId = z
  .string()
  .trim()
  .min(1)
  .max(128)
  .openapi({ description: "The scanner's scan id", example: "scan-7f3a" });

export const ScanProgressEventSchema = z
  .object({
    type: z.enum(["started", "completed"]),
    scan_id: ScanId,
    person_id: IdSchema,
    at: At,
  })
  .openapi("ScanProgressEvent");

export const ScanResultEventSchema = z
  .object({
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
  })
  .openapi("ScanResultEvent");

export const RemovalConfirmedEventSchema = z
  .object({
    type: z.literal("removal_confirmed"),
    exposure_id: IdSchema,
    at: At,
  })
  .openapi("RemovalConfirmedEvent");

export const ScanEventSchema = z.discriminatedUnion("type", [
  ScanProgressEventSchema,
  ScanResultEventSchema,
  RemovalConfirmedEventSchema,
]);

export const MAX_SCAN_EVENTS = 100;

/** The request body and the queue message body: a bare array of 1–100 events. */
export const ScanEventBatchSchema = z
  .array(ScanEventSchema)
  .min(1)
  .max(MAX_SCAN_EVENTS)
  .openapi("ScanEventBatch", { description: "1–100 scan events, applied in order" });

export type ScanEvent = z.output<typeof ScanEventSchema>;

export const AcceptedSchema = z
  .object({ accepted: z.number().int().openapi({ description: "Events queued", example: 3 }) })
  .openapi("ScanEventsAccepted");
