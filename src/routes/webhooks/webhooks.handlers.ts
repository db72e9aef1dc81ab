import { badRequest, notFound } from "../../lib/errors";
import { setPageHeaders } from "../../lib/pagination";
import * as history from "../../services/webhook-history";
import * as webhooks from "../../services/webhooks";
import type { AppRouteHandler } from "../../types";
import type * as routes from "./webhooks.routes";

export const listWebhooks: AppRouteHandler<typeof routes.listWebhooks> = async (c) => {
  return c.json(await webhooks.listWebhooks(c.var.db, c.var.company.companyId), 200);
};

export const listHistory: AppRouteHandler<typeof routes.listHistory> = async (c) => {
  const { page, per_page, start_date, end_date, type } = c.req.valid("query");
  const { total, items } = await history.listHistory(
    c.var.db,
    c.var.company.companyId,
    { start: start_date, end: end_date, types: type },
    { page, per_page },
  );
  setPageHeaders(c, { page, per_page }, total);
  return c.json(items, 200);
};

export const getWebhook: AppRouteHandler<typeof routes.getWebhook> = async (c) => {
  const { id } = c.req.valid("param");
  const webhook = await webhooks.getWebhook(c.var.db, c.var.company.companyId, id);
  if (!webhook) throw notFound(`webhook ${id} does not exist`);
  return c.json(webhook, 200);
};

export const createWebhook: AppRouteHandler<typeof routes.createWebhook> = async (c) => {
  const input = c.req.valid("json");
  const problem = webhooks.endpointProblem(input.endpoint, c.env.ENVIRONMENT);
  if (problem) throw badRequest(`invalid body: \`endpoint\` ${problem}`);
  return c.json(await webhooks.createWebhook(c.var.db, c.var.company.companyId, input), 201);
};

export const updateWebhook: AppRouteHandler<typeof routes.updateWebhook> = async (c) => {
  const { id } = c.req.valid("param");
  const { active } = c.req.valid("json");
  const webhook = await webhooks.setWebhookActive(c.var.db, c.var.company.companyId, id, active);
  if (!webhook) throw notFound(`webhook ${id} does not exist`);
  return c.json(webhook, 200);
};

export const deleteWebhook: AppRouteHandler<typeof routes.deleteWebhook> = async (c) => {
  const { id } = c.req.valid("param");
  if (!(await webhooks.deleteWebhook(c.var.db, c.var.company.companyId, id))) {
    throw notFound(`webhook ${id} does not exist`);
  }
  return c.body(null, 204);
};
