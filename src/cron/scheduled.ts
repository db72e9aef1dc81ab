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
 *
 * Each job runs on its own: a failing job is logged (JSON, with its name) and
 * the next one still runs; its work waits for the next run.
 */
export async function handleScheduled(controller: ScheduledController, env: Env): Promise<void> {
  const db = createDb(env.DB);
  const now = new Date(controller.scheduledTime);
  const run = async <T>(job: string, work: () => Promise<T>): Promise<T | null> => {
    try {
      return await work();
    } catch (err) {
      console.error(
        JSON.stringify({
          level: "error",
          cron: controller.cron,
          job,
          error: err instanceof Error ? `${err.name}: ${err.message}` : String(err),
        }),
      );
      return null;
    }
  };
  switch (controller.cron) {
    case HOURLY: {
      // The sweep (recovery of unsent deliveries) first: it is what makes every other job's events arrive.
      const deliveriesRequeued = await run("sweep", () => sweepOutbox(db, env.WEBHOOK_QUEUE, now));
      // Removed exactly as DELETE /employees/{id} removes (index rewrite, `person:removed`).
      const purged = await run("purge", () =>
        purgeExpiredEphemeral({ db, kv: env.TRUST_INDEX, queue: env.WEBHOOK_QUEUE }, now),
      );
      const removalsRequested = await run("removals", () => submitRemovalRequests(db, env.WEBHOOK_QUEUE, now));
      // null: the job failed (logged above).
      console.log(
        JSON.stringify({
          cron: controller.cron,
          deliveriesRequeued,
          ephemeralPurged: purged?.length ?? null,
          removalsRequested,
        }),
      );
      return;
    }
    case DAILY: {
      const pruned = await run("prune", () => pruneDeliveredHistory(db, now));
      console.log(JSON.stringify({ cron: controller.cron, historyPruned: pruned }));
      return;
    }
    default:
      console.warn(JSON.stringify({ cron: controller.cron, warning: "no job is scheduled for this cron" }));
  }
}
