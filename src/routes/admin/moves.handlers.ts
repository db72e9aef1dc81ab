import * as moves from "../../services/person-moves";
import { handOverStatus } from "../../services/webhook-delivery";
import type { AppRouteHandler } from "../../types";
import type * as routes from "./moves.routes";

export const startPersonMoves: AppRouteHandler<typeof routes.startPersonMoves> = async (c) => {
  await moves.startPersonMoves(c.var.deps);
  return c.json(await moves.personMoveStatus(c.var.deps), 202);
};

export const personMoveStatus: AppRouteHandler<typeof routes.personMoveStatus> = async (c) =>
  c.json(await moves.personMoveStatus(c.var.deps), 200);

export const startCompanyMoves: AppRouteHandler<typeof routes.startCompanyMoves> = async (c) => {
  const status = await handOverStatus(c.var.deps);
  if (status.finished_in_d1 > 0) await c.var.deps.backgroundQueue.send({ kind: "hand-over-history" });
  return c.json(status, 202);
};

export const companyMoveStatus: AppRouteHandler<typeof routes.companyMoveStatus> = async (c) =>
  c.json(await handOverStatus(c.var.deps), 200);
