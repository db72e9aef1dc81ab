import { personId } from "../../middleware/auth";
import * as myPhones from "../../services/my-phones";
import type { AppRouteHandler } from "../../types";
import type * as routes from "./me.routes";

export const listMyPhones: AppRouteHandler<typeof routes.listMyPhones> = async (c) =>
  c.json(await myPhones.listMyPhones(c.var.deps, personId(c.var.principal)), 200);

export const confirmMyPhone: AppRouteHandler<typeof routes.confirmMyPhone> = async (c) =>
  c.json(await myPhones.confirmMyPhone(c.var.deps, personId(c.var.principal), c.req.valid("param").id), 200);
