import { createRoute, z } from "@hono/zod-openapi";
import { bearerSecurity, errorResponses, jsonContent } from "../../lib/openapi";
import { pageHeaders } from "../../lib/pagination";
import { companyAccess } from "../../middleware/company-access";
import { CompanyParams } from "../companies/companies.schemas";
import {
  CreateWebhookSchema,
  HistoryQuery,
  UpdateWebhookSchema,
  WebhookHistorySchema,
  WebhookParams,
  WebhookSchema,
} from "./webhooks.schemas";

const tags = ["Webhooks"];

export const listWebhooks = createRoute({
  method: "get",
  path: "/companies/{company_id}/webhooks",
  tags,
  summary: "List the company's webhooks",
  description: "Needs `read webhooks`.",
  security: bearerSecurity,
  middleware: [companyAccess("read webhooks")] as const,
  request: { params: CompanyParams },
  responses: {
    200: jsonContent(z.array(WebhookSchema), "The webhooks, oldest first"),
    ...errorResponses(400, 401, 403, 404, 429),
  },
});

/** Declared (and registered) before `/webhooks/{id}`, which it must not be taken for. */
export const listHistory = createRoute({
  method: "get",
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
  path: "/companies/{company_id}/webhooks/{id}",
  tags,
  summary: "Read one webhook",
  description: "Needs `read webhooks`.",
  security: bearerSecurity,
  middleware: [companyAccess("read webhooks")] as const,
  request: { params: WebhookParams },
  responses: {
    200: jsonContent(WebhookSchema, "The webhook"),
    ...errorResponses(400, 401, 403, 404, 429),
  },
});

export const createWebhook = createRoute({
  method: "post",
  path: "/companies/{company_id}/webhooks",
  tags,
  summary: "Register a webhook for one event",
  description:
    "Needs `write webhooks`. `endpoint` must be an absolute `https://` URL without credentials (`http://` and " +
    "loopback hosts only in development). The service generates the signing `secret`; deliveries follow the " +
    "Standard Webhooks specification (`webhook-id`, `webhook-timestamp`, `webhook-signature`).",
  security: bearerSecurity,
  middleware: [companyAccess("write webhooks")] as const,
  request: {
    params: CompanyParams,
    body: { required: true, content: { "application/json": { schema: CreateWebhookSchema } } },
  },
  responses: {
    201: jsonContent(WebhookSchema, "The webhook, with its secret"),
    ...errorResponses(400, 401, 403, 404, 413, 429),
  },
});

export const updateWebhook = createRoute({
  method: "patch",
  path: "/companies/{company_id}/webhooks/{id}",
  tags,
  summary: "Activate or deactivate a webhook",
  description: "Needs `write webhooks`. An inactive webhook receives nothing, including retries already scheduled.",
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
