import { createRoute, z } from "@hono/zod-openapi";
import { bearerSecurity, errorResponses, jsonContent } from "../../lib/openapi";
import { pageHeaders } from "../../lib/pagination";
import { companyAccess } from "../../middleware/company-access";
import { CompanyParams } from "../companies/companies.schemas";
import {
  CreateWebhookSchema,
  HistoryParams,
  HistoryQuery,
  ResendSchema,
  TestResultSchema,
  UpdateWebhookSchema,
  WebhookHistoryDetailSchema,
  WebhookHistorySchema,
  WebhookEventSchema,
  WebhookParams,
  WebhookSchema,
} from "./webhooks.schemas";
import { IdempotencyHeaders, idempotent, replayedHeader } from "../../middleware/idempotency";
import { ConditionalHeaders, conditionalRead, notModified, withETag } from "../../middleware/conditional";

const tags = ["Webhooks"];

export const listWebhooks = createRoute({
  method: "get",
  operationId: "listWebhooks",
  path: "/companies/{company_id}/webhooks",
  tags,
  summary: "List the company's webhooks",
  description: "Needs `read webhooks`.",
  security: bearerSecurity,
  middleware: [companyAccess("read webhooks"), conditionalRead] as const,
  request: { headers: ConditionalHeaders, params: CompanyParams },
  responses: {
    200: withETag(jsonContent(z.array(WebhookSchema), "The webhooks, oldest first")),
    ...notModified,
    ...errorResponses(400, 401, 403, 404, 429),
  },
});

/** Declared (and registered) before `/webhooks/{id}`, which it must not be taken for. */
export const listEvents = createRoute({
  method: "get",
  operationId: "listWebhookEvents",
  path: "/companies/{company_id}/webhooks/events",
  tags,
  summary: "The events a webhook can subscribe to",
  description:
    "Needs `read webhooks`. Every event, with a one-line description and a sample delivery body " +
    "(`type`, `timestamp`, `data`); docs/webhooks.md in the repository says more about each.",
  security: bearerSecurity,
  middleware: [companyAccess("read webhooks")] as const,
  request: { params: CompanyParams },
  responses: {
    200: jsonContent(z.array(WebhookEventSchema), "Every event, in a stable order"),
    ...errorResponses(400, 401, 403, 404, 429),
  },
});

/** Declared (and registered) before `/webhooks/{id}`, which it must not be taken for. */
export const listHistory = createRoute({
  method: "get",
  operationId: "listHistory",
  path: "/companies/{company_id}/webhooks/history",
  tags,
  summary: "The company's webhook delivery history",
  description:
    "Needs `read webhooks`. Newest first; `start_date` inclusive, `end_date` exclusive; `type` one event name " +
    "or a comma-separated list. Paged: `X-Total-Count` and `Link` headers.",
  security: bearerSecurity,
  middleware: [companyAccess("read webhooks")] as const,
  request: { params: CompanyParams, query: HistoryQuery },
  responses: {
    200: { ...jsonContent(z.array(WebhookHistorySchema), "One page of deliveries"), headers: pageHeaders },
    ...errorResponses(400, 401, 403, 404, 429),
  },
});

export const getWebhook = createRoute({
  method: "get",
  operationId: "getWebhook",
  path: "/companies/{company_id}/webhooks/{id}",
  tags,
  summary: "Read one webhook",
  description: "Needs `read webhooks`.",
  security: bearerSecurity,
  middleware: [companyAccess("read webhooks"), conditionalRead] as const,
  request: { headers: ConditionalHeaders, params: WebhookParams },
  responses: {
    200: withETag(jsonContent(WebhookSchema, "The webhook")),
    ...notModified,
    ...errorResponses(400, 401, 403, 404, 429),
  },
});

export const createWebhook = createRoute({
  method: "post",
  operationId: "createWebhook",
  path: "/companies/{company_id}/webhooks",
  tags,
  summary: "Register a webhook for one event",
  description:
    "Needs `write webhooks`. `endpoint` must be an absolute `https://` URL without credentials whose host is " +
    "public (no private, loopback or link-local address, no `localhost`, `.local`, `.internal`; see " +
    "docs/webhooks.md); `http://` and any host in development. At most 50 webhooks per company. The service " +
    "generates the signing `secret`; deliveries follow the Standard Webhooks specification (`webhook-id`, " +
    "`webhook-timestamp`, `webhook-signature`).",
  security: bearerSecurity,
  middleware: [companyAccess("write webhooks"), idempotent("company")] as const,
  request: {
    params: CompanyParams,
    headers: IdempotencyHeaders,
    body: { required: true, content: { "application/json": { schema: CreateWebhookSchema } } },
  },
  responses: {
    201: { ...jsonContent(WebhookSchema, "The webhook, with its secret"), headers: replayedHeader },
    ...errorResponses(400, 401, 403, 404, 409, 413, 422, 429),
  },
});

export const updateWebhook = createRoute({
  method: "patch",
  operationId: "updateWebhook",
  path: "/companies/{company_id}/webhooks/{id}",
  tags,
  summary: "Change a webhook's endpoint, event or state",
  description:
    "Needs `write webhooks`. Any of `active`, `endpoint` and `event`, at least one; the others stay. A new " +
    "`endpoint` follows the rules of creation (400 otherwise). An inactive webhook receives nothing, including " +
    "retries already scheduled. `active` clears `disabled_reason`; `active: true` needs the endpoint to still be " +
    "allowed (else 400). Attempts after the change, retries included, go to the new endpoint; an event change applies to events from then on.",
  security: bearerSecurity,
  middleware: [companyAccess("write webhooks")] as const,
  request: {
    params: WebhookParams,
    body: { required: true, content: { "application/json": { schema: UpdateWebhookSchema } } },
  },
  responses: {
    200: jsonContent(WebhookSchema, "The updated webhook"),
    ...errorResponses(400, 401, 403, 404, 413, 429),
  },
});

export const deleteWebhook = createRoute({
  method: "delete",
  operationId: "deleteWebhook",
  path: "/companies/{company_id}/webhooks/{id}",
  tags,
  summary: "Delete a webhook permanently",
  description: "Needs `write webhooks`. Its delivery history stays readable; pending deliveries are dropped.",
  security: bearerSecurity,
  middleware: [companyAccess("write webhooks")] as const,
  request: { params: WebhookParams },
  responses: {
    204: { description: "Deleted" },
    ...errorResponses(400, 401, 403, 404, 429),
  },
});

/** Declared (and registered) before `/webhooks/{id}`. */
export const getHistoryEntry = createRoute({
  method: "get",
  operationId: "getWebhookHistoryEntry",
  path: "/companies/{company_id}/webhooks/history/{history_id}",
  tags,
  summary: "Read one delivery with its attempts",
  description: "Needs `read webhooks`. `attempts` lists every attempt, oldest first.",
  security: bearerSecurity,
  middleware: [companyAccess("read webhooks")] as const,
  request: { params: HistoryParams },
  responses: {
    200: jsonContent(WebhookHistoryDetailSchema, "The history entry and its attempts"),
    ...errorResponses(400, 401, 403, 404, 429),
  },
});

export const resendDelivery = createRoute({
  method: "post",
  operationId: "resendWebhookDelivery",
  path: "/companies/{company_id}/webhooks/history/{history_id}/resend",
  tags,
  summary: "Deliver a history entry again",
  description:
    "Needs `write webhooks`. The same payload and `webhook-id` are delivered again, on a new schedule of up to " +
    "eight attempts. 409 when the entry's webhook was deleted or is inactive.",
  security: bearerSecurity,
  middleware: [companyAccess("write webhooks")] as const,
  request: { params: HistoryParams },
  responses: {
    202: jsonContent(ResendSchema, "Queued for delivery"),
    ...errorResponses(400, 401, 403, 404, 409, 429),
  },
});

export const testWebhook = createRoute({
  method: "post",
  operationId: "testWebhook",
  path: "/companies/{company_id}/webhooks/{id}/test",
  tags,
  summary: "Send a signed test event now",
  description:
    'Needs `write webhooks`. POSTs a `webhook:test` event (`data: {"webhook_id": id}`) to the endpoint once, ' +
    "active or not, records it in the history and answers how it went. It does not change the webhook.",
  security: bearerSecurity,
  middleware: [companyAccess("write webhooks")] as const,
  request: { params: WebhookParams },
  responses: {
    200: jsonContent(TestResultSchema, "What the endpoint answered"),
    ...errorResponses(400, 401, 403, 404, 429),
  },
});

export const rotateSecret = createRoute({
  method: "post",
  operationId: "rotateWebhookSecret",
  path: "/companies/{company_id}/webhooks/{id}/rotate-secret",
  tags,
  summary: "Replace the signing secret",
  description:
    "Needs `write webhooks`. Answers the webhook with its new `secret`. For 24 h deliveries carry two signatures " +
    "in `webhook-signature`, the new secret's first, then the old one's, so receivers can switch without losing a message.",
  security: bearerSecurity,
  middleware: [companyAccess("write webhooks")] as const,
  request: { params: WebhookParams },
  responses: {
    200: jsonContent(WebhookSchema, "The webhook with its new secret"),
    ...errorResponses(400, 401, 403, 404, 429),
  },
});
