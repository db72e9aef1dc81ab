import { badRequest } from "../../lib/errors";
import { phoneFromInternational } from "../../lib/phone";
import { revokeDevice } from "../../services/devices";
import { releaseNumber } from "../../services/my-phones";
import { readOutbox as outbox } from "../../services/messaging/dev-outbox";
import type { AppRouteHandler } from "../../types";
import type * as routes from "./people.routes";

export const releasePhone: AppRouteHandler<typeof routes.releasePhone> = async (c) => {
  const phone = phoneFromInternational(c.req.valid("param").e164);
  if (!phone) throw badRequest("`e164` must be a valid phone number in E.164 form, e.g. +14155550100");
  return c.json({ released: await releaseNumber(c.var.deps, phone.e164) }, 200);
};

export const revokeToken: AppRouteHandler<typeof routes.revokeToken> = async (c) => {
  await revokeDevice(c.var.deps, null, c.req.valid("param").id);
  return c.body(null, 204);
};

export const readOutbox: AppRouteHandler<typeof routes.readOutbox> = async (c) => {
  const { to, limit } = c.req.valid("query");
  return c.json(await outbox(c.var.deps, to?.trim().toLowerCase(), limit), 200);
};
