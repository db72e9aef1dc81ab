import { scanSideInD1, startCompanyScanMoves } from "../../services/company-scan-moves";
import type { Deps } from "../../services/deps";
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

/** Where the companies' move stands: the history's hand-over and the scan side's move. */
const companyMoveStatusOf = async (deps: Deps) => ({
  ...(await handOverStatus(deps)),
  scan_side_in_d1: await scanSideInD1(deps),
});

export const startCompanyMoves: AppRouteHandler<typeof routes.startCompanyMoves> = async (c) => {
  const status = await companyMoveStatusOf(c.var.deps);
  if (status.finished_in_d1 > 0) await c.var.deps.backgroundQueue.send({ kind: "hand-over-history" });
  if (status.scan_side_in_d1 > 0) await startCompanyScanMoves(c.var.deps);
  return c.json(status, 202);
};

export const companyMoveStatus: AppRouteHandler<typeof routes.companyMoveStatus> = async (c) =>
  c.json(await companyMoveStatusOf(c.var.deps), 200);
