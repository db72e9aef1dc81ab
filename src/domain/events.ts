/**
 * The webhook events: the names a company subscribes to and every delivery
 * carries as `type` (docs/webhooks.md). Commands record them
 * (services/outbox.ts); the webhooks routes validate and document them.
 */
export const EVENT_NAMES = [
  "scan:started",
  "scan:completed",
  "scan:not_found",
  "scan:found",
  "scan:failed",
  "exposure:created",
  "exposure:requested",
  "exposure:closed",
  "request:created",
  "request:closed",
  "person:created",
  "person:updated",
  "person:removed",
] as const;

export type EventName = (typeof EVENT_NAMES)[number];

/** The event of `POST /webhooks/{id}/test`; not one subscribers choose. */
export const TEST_EVENT = "webhook:test";
