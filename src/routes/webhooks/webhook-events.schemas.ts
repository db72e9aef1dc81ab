import { z } from "@hono/zod-openapi";
import { EVENT_NAMES, TEST_EVENT, type EventName } from "../../domain/events";
import { CompanyRefSchema } from "../companies/companies.schemas";
import { ExposureSchema, PersonBodySchema } from "../employees/employees.schemas";
import { int64Id } from "../../lib/ids";

/**
 * The `data` of every event a webhook can receive, as the services build it
 * (docs/webhooks.md lists one example body per event; a test checks them
 * against these schemas).
 */

/** `scan:started`, `scan:completed`; with `site` for the per-site `scan:not_found`, `scan:failed`. */
export const ScanEventPayload = z.object({
  scan_id: z.string(),
  person_id: int64Id(),
  site: CompanyRefSchema.optional(),
  at: z.string().openapi({ format: "date-time" }),
});

export const ScanSiteEventPayload = ScanEventPayload.extend({ site: CompanyRefSchema });

/** `scan:found`: the per-site event plus the listing. */
export const ScanResultPayload = ScanSiteEventPayload.extend({
  url: z.string().nullable(),
  data: z.record(z.string(), z.unknown()),
});

export const PersonRemovedPayload = z.object({ id: int64Id() });

export const TestPayload = z.object({ webhook_id: int64Id() });

export const EVENT_PAYLOADS: Record<EventName | typeof TEST_EVENT, z.ZodType> = {
  "scan:started": ScanEventPayload,
  "scan:completed": ScanEventPayload,
  "scan:not_found": ScanSiteEventPayload,
  "scan:found": ScanResultPayload,
  "scan:failed": ScanSiteEventPayload,
  "exposure:created": ExposureSchema,
  "exposure:requested": ExposureSchema,
  "exposure:closed": ExposureSchema,
  "request:created": ExposureSchema,
  "request:closed": ExposureSchema,
  "person:created": PersonBodySchema,
  "person:updated": PersonBodySchema,
  "person:removed": PersonRemovedPayload,
  [TEST_EVENT]: TestPayload,
};

/** Every body POSTed: `{"type", "timestamp", "data"}`. */
export const deliveryBodySchema = (event: keyof typeof EVENT_PAYLOADS) =>
  z.object({
    type: z.literal(event),
    timestamp: z.string().openapi({ format: "date-time" }),
    data: EVENT_PAYLOADS[event],
  });

export const DELIVERED_EVENTS = [...EVENT_NAMES, TEST_EVENT] as const;
