import * as moves from "../../services/person-moves";
import type { AppRouteHandler } from "../../types";
import type * as routes from "./moves.routes";

export const startPersonMoves: AppRouteHandler<typeof routes.startPersonMoves> = async (c) => {
  await moves.startPersonMoves(c.var.deps);
  return c.json(await moves.personMoveStatus(c.var.deps), 202);
};

export const personMoveStatus: AppRouteHandler<typeof routes.personMoveStatus> = async (c) =>
  c.json(await moves.personMoveStatus(c.var.deps), 200);
