import { logError, logInfo } from "../lib/log";
import type { BackgroundMessage } from "../domain/queue-messages";
import { runBackgroundJob } from "../services/background-jobs";
import { backgroundStatus } from "../services/backlog";
import { deadLetterDue } from "../services/dead-letters";
import { rebuildIfNever } from "../services/index-rebuild";
import { createDeps } from "../services/create-deps";
import { resealProviderSecrets } from "../services/provider-secrets";

export const MINUTELY = "* * * * *";
export const HOURLY = "0 * * * *";
export const DAILY = "30 3 * * *";

/**
 * The cron triggers of wrangler.toml (docs/architecture.md, "Background
 * work"). Locally: `curl "127.0.0.1:8787/cdn-cgi/handler/scheduled?cron=0+*+*+*+*"`
 * (wrangler dev runs with --test-scheduled).
 *
 * Each job runs on its own: a failing job is logged (JSON, with its name) and
 * the next one still runs; its work waits for the next run. Every job does
 * one bounded chunk here; a full chunk continues at once through a message
 * of its kind on the background queue (src/services/background-jobs.ts).
 * The minute run also logs the backlog as one metric line
 * (`"metric": "background_backlog"`, the body of `GET /internal/status`).
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
  /** Runs the first chunk of a job and sends its continuation; what it did, or null when it failed (logged). */
  const job = (name: string, body: BackgroundMessage) =>
    run(name, async () => {
      const chunk = await runBackgroundJob(deps, body, now);
      if (chunk.next) await deps.backgroundQueue.send(chunk.next);
      return { ...chunk.done, continues: chunk.next !== undefined };
    });
  switch (controller.cron) {
    case MINUTELY: {
      // The sweeps recover what a commit could not finish: index work KV refused, deliveries not enqueued.
      const index = await job("index", { kind: "reindex" });
      const outbox = await job("sweep", { kind: "outbox" });
      // Finished webhook deliveries whose hand-over to their company's object right after they finished failed.
      const history = await job("hand-over", { kind: "hand-over-history" });
      // Objects of deleted accounts whose erasure right after the commit failed.
      const erase = await job("erase", { kind: "erase-persons" });
      // People whose membership ended, left for their company's object to forget when telling it after the commit failed.
      const forget = await job("forget", { kind: "forget-people" });
      // Dead letters due for another try: redriven one per invocation through `redrive` messages.
      const redrive = await run("redrive", async () => {
        const due = await deadLetterDue(deps, now);
        if (due) await deps.backgroundQueue.send({ kind: "redrive" });
        return due;
      });
      // A deployment whose trust index was never built builds it (then marks it complete).
      const rebuild = await run("rebuild", () => rebuildIfNever(deps, now));
      // Twilio auth tokens stored in clear by an older version, or under a key rotated away, sealed
      // under PROVIDER_SECRET_KEYS' first key (one read of the few signed tokens when none is due).
      const providerKeys = await run("provider-keys", () => resealProviderSecrets(deps, now));
      logInfo({ cron: controller.cron, index, outbox, history, erase, forget, redrive, rebuild, providerKeys });
      const backlog = await run("status", () => backgroundStatus(deps, now));
      if (backlog) logInfo({ metric: "background_backlog", ...backlog });
      return;
    }
    case HOURLY: {
      const outbox = await job("sweep", { kind: "outbox" });
      const purge = await job("purge", { kind: "purge" });
      const removals = await job("removals", { kind: "removals" });
      // What a lost message or an unavailable email service left (one read when nothing is due).
      const invitations = await job("invitations", { kind: "invitations" });
      // null: the job failed (logged above).
      logInfo({ cron: controller.cron, outbox, purge, removals, invitations });
      return;
    }
    case DAILY: {
      // Retention (docs/capacity.md) and the tombstone prune.
      const retention = await job("retention", { kind: "retention" });
      const tombstones = await job("tombstones", { kind: "tombstones" });
      logInfo({ cron: controller.cron, retention, tombstones });
      return;
    }
    default:
      console.warn(JSON.stringify({ cron: controller.cron, warning: "no job is scheduled for this cron" }));
  }
}
