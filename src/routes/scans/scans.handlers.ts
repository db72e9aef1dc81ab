import { badRequest, ApiError } from "../../lib/errors";
import { missingReferences, packMessages } from "../../services/scans";
import type { AppRouteHandler } from "../../types";
import type * as routes from "./scans.routes";

export const postScanEvents: AppRouteHandler<typeof routes.postScanEvents> = async (c) => {
  const events = c.req.valid("json");
  const problems = await missingReferences(c.var.db, events);
  if (problems.length > 0) throw badRequest(`invalid body: ${problems.join("; ")}`);

  // The message carries the batch as it was posted; the consumer validates it again.
  const packed = packMessages(await c.req.json<unknown[]>());
  if ("tooLarge" in packed) {
    throw new ApiError(413, `event [${packed.tooLarge}] is larger than a queue message can hold (120 kB)`);
  }
  for (const message of packed.messages) await c.env.SCAN_QUEUE.send(message);
  return c.json({ accepted: events.length }, 202);
};
