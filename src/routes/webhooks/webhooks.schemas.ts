import { z } from "@hono/zod-openapi";
import { pathId, int64Id } from "../../lib/ids";
import { pageQuery } from "../../lib/pagination";
import { QueryTimestamp } from "../../lib/time";
import { EVENT_NAMES, TEST_EVENT } from "../../domain/events";
import { MAX_ENDPOINT_LENGTH } from "../../services/webhooks";
import { CompanyParams } from "../companies/companies.schemas";
import { whenAbsent } from "../../lib/openapi";

const EVENT_LIST = EVENT_NAMES.join(", ");

export const EventNameSchema = z
  .enum(EVENT_NAMES, { error: `must be one of ${EVENT_LIST}` })
  .openapi({ example: "scan:found" });

export const WebhookSchema = z
  .object({
    id: int64Id().openapi({ example: 1 }),
    endpoint: z.string().openapi({ example: "https://hooks.acme.example/privacy" }),
    event: z.string().openapi({ example: "scan:found" }),
    active: z.boolean(),
    secret: z.string().openapi({
      description: "Standard Webhooks signing secret: `whsec_` + base64 key",
      example: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
    }),
    disabled_reason: z
      .string()
      .nullable()
      .openapi({
        description:
          "Why the service deactivated the webhook: `endpoint answered 410` or `failing for 5 days`; null otherwise. " +
          "A PATCH with `active: true` clears it.",
        example: null,
      }),
    created_at: z.string().openapi({ format: "date-time" }),
    updated_at: z.string().openapi({ format: "date-time" }),
  })
  .openapi("Webhook");

/** Checked further by lib/outbound-url.ts (public host, no credentials), at creation and on PATCH. */
const EndpointSchema = z.string().trim().min(1).max(MAX_ENDPOINT_LENGTH).openapi({
  description: "Absolute https:// URL without credentials",
  format: "uri",
  example: "https://hooks.acme.example/privacy",
});

export const CreateWebhookSchema = z
  .object({
    endpoint: EndpointSchema,
    event: EventNameSchema,
    active: whenAbsent(z.boolean(), true).openapi({ description: "True when absent" }),
  })
  .openapi("CreateWebhook");

export const UpdateWebhookSchema = z
  .object({
    active: z.boolean().optional(),
    endpoint: EndpointSchema.optional(),
    event: EventNameSchema.optional(),
  })
  .refine((body) => Object.values(body).some((value) => value !== undefined), {
    message: "name at least one of `active`, `endpoint`, `event`",
  })
  .openapi("UpdateWebhook", { minProperties: 1 });

/** One event of `GET …/webhooks/events`. */
export const WebhookEventSchema = z
  .object({
    event: EventNameSchema,
    description: z.string().openapi({ example: "A people-search site lists the person" }),
    sample: z
      .object({
        type: EventNameSchema,
        timestamp: z.string().openapi({ format: "date-time" }),
        data: z.record(z.string(), z.unknown()),
      })
      .openapi({ description: "A delivery body of this event (docs/webhooks.md shows each too)" }),
  })
  .openapi("WebhookEvent");

export const WebhookParams = CompanyParams.extend({ id: pathId("id", "Webhook id") });

export const HistoryParams = CompanyParams.extend({
  history_id: z
    .string()
    .min(1)
    .max(64)
    .openapi({ param: { name: "history_id", in: "path" }, description: "History entry id (the `webhook-id`)" }),
});

export const WebhookHistorySchema = z
  .object({
    id: z.string().openapi({ description: "Also the `webhook-id` header of the delivery", example: "0b9d…" }),
    event: z.string().openapi({ description: "An event name, or `webhook:test`", example: "scan:found" }),
    payload: z.unknown().openapi({ description: "The `data` delivered" }),
    status: z.enum(["pending", "dispatched", "success", "failed"]),
    result: z.string().openapi({
      description:
        "Last answer: the HTTP status as digits, or `timeout`, `connection failed`, `invalid response`, " +
        "`invalid endpoint`, or `not delivered: …`; empty before the first attempt",
      example: "200",
    }),
    created_at: z.string().openapi({ format: "date-time" }),
  })
  .openapi("WebhookHistory");

export const WebhookAttemptSchema = z
  .object({
    at: z.string().openapi({ format: "date-time" }),
    result: z.string().openapi({ description: "As `result` of the entry", example: "503" }),
    duration_ms: z.number().int().openapi({ example: 87 }),
  })
  .openapi("WebhookAttempt");

export const WebhookHistoryDetailSchema = WebhookHistorySchema.extend({
  attempts: z.array(WebhookAttemptSchema).openapi({ description: "Every attempt, oldest first" }),
}).openapi("WebhookHistoryDetail");

export const TestResultSchema = z
  .object({
    status: z.enum(["success", "failed"]),
    result: z.string().openapi({ description: "As `result` of a history entry", example: "200" }),
    history_id: z.string().openapi({ description: "The `webhook:test` entry recorded in the history" }),
  })
  .openapi("WebhookTestResult");

export const ResendSchema = z
  .object({ history_id: z.string().openapi({ description: "The entry being delivered again" }) })
  .openapi("WebhookResend");

const HISTORY_EVENTS: readonly string[] = [...EVENT_NAMES, TEST_EVENT];

/**
 * `type=scan:found,scan:failed` (or `type` repeated): each name must be an
 * event name or `webhook:test`; repeats count once.
 */
const TypeList = z
  .preprocess((value) => (Array.isArray(value) ? value.join(",") : value), z.string())
  .transform((value, ctx) => {
    const names = [
      ...new Set(
        value
          .split(",")
          .map((name) => name.trim())
          .filter(Boolean),
      ),
    ];
    const unknown = names.filter((name) => !HISTORY_EVENTS.includes(name));
    if (unknown.length > 0) {
      ctx.addIssue({
        code: "custom",
        message: `has unknown event ${unknown.slice(0, 5).join(", ")}; valid: ${EVENT_LIST}, ${TEST_EVENT}`,
      });
      return z.NEVER;
    }
    return names;
  })
  .openapi({
    param: { name: "type", in: "query" },
    type: "string",
    description: "One event name or a comma-separated list",
    example: "scan:found,exposure:created",
  });

export const HistoryQuery = pageQuery(100, 1000)
  .extend({
    // JSON Schema cannot compare two parameters: the rule is in words, and the examples keep it (January).
    start_date: QueryTimestamp.optional().openapi({
      param: { name: "start_date", in: "query" },
      description: "Only events at or after this time; must be earlier than `end_date` when both are given (else 400)",
      example: "2026-01-01T00:00:00Z",
    }),
    end_date: QueryTimestamp.optional().openapi({
      param: { name: "end_date", in: "query" },
      description: "Only events before this time; must be later than `start_date` when both are given (else 400)",
      example: "2026-02-01T00:00:00Z",
    }),
    type: TypeList.optional(),
  })
  .refine((q) => !q.start_date || !q.end_date || q.start_date < q.end_date, {
    message: "must be later than `start_date`",
    path: ["end_date"],
  });
