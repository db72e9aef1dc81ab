import { unauthorized } from "../../lib/errors";
import { personId } from "../../middleware/auth";
import * as myPhones from "../../services/my-phones";
import { changeSettings, readSettings } from "../../services/person-settings";
import { ownAccount } from "../../services/own-account";
import type { AppRouteHandler } from "../../types";
import type * as routes from "./me.routes";

/* ---------- GET /me ---------- */

export const getMe: AppRouteHandler<typeof routes.getMe> = async (c) => {
  const me = await ownAccount(c.var.deps, personId(c.var.principal));
  if (!me) throw unauthorized("the bearer token's person no longer exists");
  return c.json({ ...me, token_kind: "person" as const }, 200);
};

/* ---------- the caller's phones ---------- */

export const listMyPhones: AppRouteHandler<typeof routes.listMyPhones> = async (c) =>
  c.json(await myPhones.listMyPhones(c.var.deps, personId(c.var.principal)), 200);

export const confirmMyPhone: AppRouteHandler<typeof routes.confirmMyPhone> = async (c) =>
  c.json(await myPhones.confirmMyPhone(c.var.deps, personId(c.var.principal), c.req.valid("param").id), 200);

/* ---------- settings ---------- */

export const getSettings: AppRouteHandler<typeof routes.getSettings> = async (c) =>
  c.json(await readSettings(c.var.deps, personId(c.var.principal)), 200);

export const putSettings: AppRouteHandler<typeof routes.putSettings> = async (c) =>
  c.json(await changeSettings(c.var.deps, personId(c.var.principal), c.req.valid("json")), 200);
