import { badRequest, conflict, notFound } from "../../lib/errors";
import { eventCatalog } from "../../domain/events";
import { endpointProblem } from "../../lib/outbound-url";
import { setPageHeaders } from "../../lib/pagination";
import * as delivery from "../../services/webhook-delivery";
import * as history from "../../services/webhook-history";
import * as webhooks from "../../services/webhooks";
import type { AppRouteHandler } from "../../types";
import type * as routes from "./webhooks.routes";

export const listWebhooks: AppRouteHandler<typeof routes.listWebhooks> = async (c) => {
  return c.json(await webhooks.listWebhooks(c.var.deps, c.var.company.companyId), 200);
};

export const listHistory: AppRouteHandler<typeof routes.listHistory> = async (c) => {
  const { page, per_page, start_date, end_date, type } = c.req.valid("query");
  const { total, items } = await history.listHistory(
    c.var.deps,
    c.var.company.companyId,
    { start: start_date, end: end_date, types: type },
    { page, per_page },
  );
  setPageHeaders(c, { page, per_page }, total);
  return c.json(items, 200);
};

export const getWebhook: AppRouteHandler<typeof routes.getWebhook> = async (c) => {
  const { id } = c.req.valid("param");
  const webhook = await webhooks.getWebhook(c.var.deps, c.var.company.companyId, id);
  if (!webhook) throw notFound(`webhook ${id} does not exist`);
  return c.json(webhook, 200);
};

export const createWebhook: AppRouteHandler<typeof routes.createWebhook> = async (c) => {
  const input = c.req.valid("json");
  const problem = endpointProblem(input.endpoint, c.var.deps.environment);
  if (problem) throw badRequest(`invalid body: \`endpoint\` ${problem}`);
  const webhook = await webhooks.createWebhook(c.var.deps, c.var.company.companyId, input);
  if (!webhook) {
    throw badRequest(`a company can have at most ${webhooks.MAX_WEBHOOKS_PER_COMPANY} webhooks; delete one first`);
  }
  return c.json(webhook, 201);
};

export const updateWebhook: AppRouteHandler<typeof routes.updateWebhook> = async (c) => {
  const { id } = c.req.valid("param");
  const changes = c.req.valid("json");
  const { companyId } = c.var.company;
  // A new endpoint is checked as at creation; switching on re-checks the endpoint it will have
  // (one registered before a rule was tightened stays off).
  if (changes.endpoint !== undefined) {
    const problem = endpointProblem(changes.endpoint, c.var.deps.environment);
    if (problem) throw badRequest(`invalid body: \`endpoint\` ${problem}`);
  } else if (changes.active) {
    const current = await webhooks.getWebhook(c.var.deps, companyId, id);
    if (!current) throw notFound(`webhook ${id} does not exist`);
    const problem = endpointProblem(current.endpoint, c.var.deps.environment);
    if (problem) throw badRequest(`webhook ${id} cannot be activated: its endpoint ${problem}`);
  }
  const webhook = await webhooks.updateWebhook(c.var.deps, companyId, id, changes);
  if (!webhook) throw notFound(`webhook ${id} does not exist`);
  return c.json(webhook, 200);
};

export const listEvents: AppRouteHandler<typeof routes.listEvents> = (c) => c.json(eventCatalog(), 200);

export const deleteWebhook: AppRouteHandler<typeof routes.deleteWebhook> = async (c) => {
  const { id } = c.req.valid("param");
  if (!(await webhooks.deleteWebhook(c.var.deps, c.var.company.companyId, id))) {
    throw notFound(`webhook ${id} does not exist`);
  }
  return c.body(null, 204);
};

export const getHistoryEntry: AppRouteHandler<typeof routes.getHistoryEntry> = async (c) => {
  const { history_id } = c.req.valid("param");
  const entry = await history.getHistoryEntry(c.var.deps, c.var.company.companyId, history_id);
  if (!entry) throw notFound(`history entry ${history_id} does not exist`);
  return c.json(entry, 200);
};

export const resendDelivery: AppRouteHandler<typeof routes.resendDelivery> = async (c) => {
  const { history_id } = c.req.valid("param");
  const outcome = await delivery.resendDelivery(c.var.deps, c.var.company.companyId, history_id);
  if (!outcome.ok) {
    if (outcome.why === "not found") throw notFound(`history entry ${history_id} does not exist`);
    throw conflict(
      outcome.why === "webhook deleted"
        ? `the webhook of history entry ${history_id} was deleted`
        : `the webhook of history entry ${history_id} is inactive; activate it first`,
    );
  }
  return c.json({ history_id }, 202);
};

export const testWebhook: AppRouteHandler<typeof routes.testWebhook> = async (c) => {
  const { id } = c.req.valid("param");
  const result = await delivery.sendTestEvent(c.var.deps, c.var.company.companyId, id);
  if (!result) throw notFound(`webhook ${id} does not exist`);
  return c.json(result, 200);
};

export const rotateSecret: AppRouteHandler<typeof routes.rotateSecret> = async (c) => {
  const { id } = c.req.valid("param");
  const webhook = await webhooks.rotateSecret(c.var.deps, c.var.company.companyId, id);
  if (!webhook) throw notFound(`webhook ${id} does not exist`);
  return c.json(webhook, 200);
};
