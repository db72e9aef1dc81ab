import { z } from "@hono/zod-openapi";
import { MAX_SCAN_EVENTS, RemovalConfirmedEvent, ScanProgressEvent, ScanResultEvent } from "../../domain/scan-events";

/** The scan events of src/domain/scan-events.ts, named for the OpenAPI document. */
export const ScanProgressEventSchema = ScanProgressEvent.openapi("ScanProgressEvent");
export const ScanResultEventSchema = ScanResultEvent.openapi("ScanResultEvent");
export const RemovalConfirmedEventSchema = RemovalConfirmedEvent.openapi("RemovalConfirmedEvent");

/** The request body: the domain's batch (1–100 events), its members referenced by name. */
export const ScanEventBatchSchema = z
  .array(z.discriminatedUnion("type", [ScanProgressEventSchema, ScanResultEventSchema, RemovalConfirmedEventSchema]))
  .min(1)
  .max(MAX_SCAN_EVENTS)
  .openapi("ScanEventBatch", { description: "1–100 scan events, applied in order" });

export const AcceptedSchema = z
  .object({ accepted: z.number().int().openapi({ description: "Events queued", example: 3 }) })
  .openapi("ScanEventsAccepted");
