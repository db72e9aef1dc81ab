import { createDb } from "../db/client";
import { submitRemovalRequests } from "../services/exposures";
import { purgeExpiredEphemeral } from "../services/memberships";
import { sweepOutbox } from "../services/webhook-delivery";
import { pruneDeliveredHistory } from "../services/webhook-history";

export const HOURLY = "0 * * * *";
export const DAILY = "30 3 * * *";

/**
 * The cron triggers of wrangler.toml. Locally: `curl
 * "127.0.0.1:8787/cdn-cgi/handler/scheduled?cron=0+*+*+*+*"` (wrangler dev runs
 * with --test-scheduled).
 */
export async function handleScheduled(controller: ScheduledController, env: Env): Promise<void> {
  const db = createDb(env.DB);
  const now = new Date(controller.scheduledTime);
  switch (controller.cron) {
    case HOURLY: {
      // Removed exactly as DELETE /employees/{id} removes (index rewrite, `person:removed`).
      const purged = await purgeExpiredEphemeral({ db, kv: env.TRUST_INDEX, queue: env.WEBHOOK_QUEUE }, now);
      console.log(JSON.stringify({ cron: controller.cron, ephemeralPurged: purged.length }));
      // The sweep (recovery of unsent deliveries) first, so a failing removal step cannot hold it up.
      const deliveriesRequeued = await sweepOutbox(db, env.WEBHOOK_QUEUE, now);
      const removalsRequested = await submitRemovalRequests(db, env.WEBHOOK_QUEUE, now);
      console.log(JSON.stringify({ cron: controller.cron, deliveriesRequeued, removalsRequested }));
      return;
    }
    case DAILY: {
      const pruned = await pruneDeliveredHistory(db, now);
      console.log(JSON.stringify({ cron: controller.cron, historyPruned: pruned }));
      return;
    }
    default:
      console.warn(JSON.stringify({ cron: controller.cron, warning: "no job is scheduled for this cron" }));
  }
}
