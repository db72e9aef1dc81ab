import { personId } from "../../middleware/auth";
import { changeSettings, readSettings } from "../../services/person-settings";
import type { AppRouteHandler } from "../../types";
import type * as routes from "./me.routes";

/* ---------- settings ---------- */

export const getSettings: AppRouteHandler<typeof routes.getSettings> = async (c) =>
  c.json(await readSettings(c.var.deps, personId(c.var.principal)), 200);

export const putSettings: AppRouteHandler<typeof routes.putSettings> = async (c) =>
  c.json(await changeSettings(c.var.deps, personId(c.var.principal), c.req.valid("json")), 200);
