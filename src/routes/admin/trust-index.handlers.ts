import * as rebuild from "../../services/index-rebuild";
import type { AppRouteHandler } from "../../types";
import type * as routes from "./trust-index.routes";

export const startRebuild: AppRouteHandler<typeof routes.startRebuild> = async (c) => {
  await rebuild.requestRebuild(c.var.deps, new Date());
  return c.json(await rebuild.rebuildStatus(c.var.deps), 202);
};

export const rebuildStatus: AppRouteHandler<typeof routes.rebuildStatus> = async (c) =>
  c.json(await rebuild.rebuildStatus(c.var.deps), 200);
