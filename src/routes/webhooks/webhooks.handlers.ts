import { accepted } from "../../lib/answer";
import { eventCatalog } from "../../domain/events";
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
  const { webhook } = accepted(await webhooks.getWebhook(c.var.deps, c.var.company.companyId, id));
  return c.json(webhook, 200);
};

export const createWebhook: AppRouteHandler<typeof routes.createWebhook> = async (c) => {
  const input = c.req.valid("json");
  const { webhook } = accepted(await webhooks.createWebhook(c.var.deps, c.var.company.companyId, input));
  return c.json(webhook, 201);
};

export const updateWebhook: AppRouteHandler<typeof routes.updateWebhook> = async (c) => {
  const { id } = c.req.valid("param");
  const changes = c.req.valid("json");
  const { webhook } = accepted(await webhooks.updateWebhook(c.var.deps, c.var.company.companyId, id, changes));
  return c.json(webhook, 200);
};

export const listEvents: AppRouteHandler<typeof routes.listEvents> = (c) => c.json(eventCatalog(), 200);

export const deleteWebhook: AppRouteHandler<typeof routes.deleteWebhook> = async (c) => {
  const { id } = c.req.valid("param");
  accepted(await webhooks.deleteWebhook(c.var.deps, c.var.company.companyId, id));
  return c.body(null, 204);
};

export const getHistoryEntry: AppRouteHandler<typeof routes.getHistoryEntry> = async (c) => {
  const { history_id } = c.req.valid("param");
  const { entry } = accepted(await history.getHistoryEntry(c.var.deps, c.var.company.companyId, history_id));
  return c.json(entry, 200);
};

export const resendDelivery: AppRouteHandler<typeof routes.resendDelivery> = async (c) => {
  const { history_id } = c.req.valid("param");
  accepted(await delivery.resendDelivery(c.var.deps, c.var.company.companyId, history_id));
  return c.json({ history_id }, 202);
};

export const testWebhook: AppRouteHandler<typeof routes.testWebhook> = async (c) => {
  const { id } = c.req.valid("param");
  const { status, result, history_id } = accepted(
    await delivery.sendTestEvent(c.var.deps, c.var.company.companyId, id),
  );
  return c.json({ status, result, history_id }, 200);
};

export const rotateSecret: AppRouteHandler<typeof routes.rotateSecret> = async (c) => {
  const { id } = c.req.valid("param");
  const { webhook } = accepted(await webhooks.rotateSecret(c.var.deps, c.var.company.companyId, id));
  return c.json(webhook, 200);
};
