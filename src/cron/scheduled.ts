import { logError, logInfo } from "../lib/log";
import { pruneContactTombstones } from "../services/contacts";
import { submitRemovalRequests } from "../services/exposures";
import { purgeExpiredEphemeral } from "../services/memberships";
import { createDeps } from "../services/outbox";
import { pruneExpired } from "../services/retention";
import { applyIndexWork } from "../services/trust-index";
import { sweepOutbox } from "../services/webhook-delivery";

export const MINUTELY = "* * * * *";
export const HOURLY = "0 * * * *";
export const DAILY = "30 3 * * *";

/** Keys the minute sweep applies per run: one KV put each, well inside 1,000 KV operations. */
export const INDEX_SWEEP_LIMIT = 200;

/**
 * The cron triggers of wrangler.toml (docs/architecture.md, "Background
 * work"). Locally: `curl "127.0.0.1:8787/cdn-cgi/handler/scheduled?cron=0+*+*+*+*"`
 * (wrangler dev runs with --test-scheduled).
 *
 * Each job runs on its own: a failing job is logged (JSON, with its name) and
 * the next one still runs; its work waits for the next run. Every job does a
 * bounded chunk; what is left continues through the background queue or the
 * next run.
 */
export async function handleScheduled(controller: ScheduledController, env: Env): Promise<void> {
  const deps = createDeps(env);
  const now = new Date(controller.scheduledTime);
  const run = async <T>(job: string, work: () => Promise<T>): Promise<T | null> => {
    try {
      return await work();
    } catch (err) {
      logError(`cron job ${job} failed`, err, { cron: controller.cron, job });
      return null;
    }
  };
  switch (controller.cron) {
    case MINUTELY: {
      // The sweeps recover what a commit could not finish: index work KV refused, deliveries not enqueued.
      const index = await run("index", () => applyIndexWork(deps, { now, limit: INDEX_SWEEP_LIMIT }));
      const deliveriesRequeued = await run("sweep", () => sweepOutbox(deps.db, deps.webhookQueue, now));
      logInfo({
        cron: controller.cron,
        indexApplied: index?.applied.length ?? null,
        indexFailed: index?.failed.length ?? null,
        deliveriesRequeued,
      });
      return;
    }
    case HOURLY: {
      const deliveriesRequeued = await run("sweep", () => sweepOutbox(deps.db, deps.webhookQueue, now));
      // The first chunk here; the background queue carries the rest (`purge` messages).
      const purged = await run("purge", async () => {
        const chunk = await purgeExpiredEphemeral(deps, now);
        if (chunk.more) await deps.backgroundQueue.send({ kind: "purge" });
        return chunk;
      });
      const removalsRequested = await run("removals", () => submitRemovalRequests(deps, now));
      // null: the job failed (logged above).
      logInfo({
        cron: controller.cron,
        deliveriesRequeued,
        ephemeralPurged: purged?.removed.length ?? null,
        purgeContinues: purged?.more ?? null,
        removalsRequested,
      });
      return;
    }
    case DAILY: {
      // Retention (docs/capacity.md): a bounded pass; a backlog continues through `retention` messages.
      const retention = await run("retention", async () => {
        const pass = await pruneExpired(deps.db, now);
        if (pass.more) await deps.backgroundQueue.send({ kind: "retention" });
        return pass;
      });
      const tombstonesPruned = await run("tombstones", () => pruneContactTombstones(deps.db, now));
      logInfo({
        cron: controller.cron,
        pruned: retention?.pruned ?? null,
        retentionContinues: retention?.more ?? null,
        tombstonesPruned,
      });
      return;
    }
    default:
      console.warn(JSON.stringify({ cron: controller.cron, warning: "no job is scheduled for this cron" }));
  }
}
