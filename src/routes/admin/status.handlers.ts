import { backgroundStatus } from "../../services/backlog";
import type { AppRouteHandler } from "../../types";
import type * as routes from "./status.routes";

export const status: AppRouteHandler<typeof routes.status> = async (c) =>
  c.json(await backgroundStatus(c.var.deps, new Date()), 200);
