import { enqueueScanEvents } from "../../services/scans";
import type { AppRouteHandler } from "../../types";
import type * as routes from "./scans.routes";

export const postScanEvents: AppRouteHandler<typeof routes.postScanEvents> = async (c) => {
  const events = c.req.valid("json");
  // The queue carries the batch as it was posted; the consumer validates it again.
  const accepted = await enqueueScanEvents(c.var.deps, events, await c.req.json<unknown[]>());
  return c.json({ accepted }, 202);
};
