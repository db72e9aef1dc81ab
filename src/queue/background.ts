import { describeZodError } from "../lib/errors";
import { logError, logInfo } from "../lib/log";
import { purgeExpiredEphemeral } from "../services/memberships";
import { createDeps } from "../services/outbox";
import { pruneExpired } from "../services/retention";
import { applyIndexWork } from "../services/trust-index";
import { backgroundMessage } from "./messages";

/**
 * `background`: work that continues past the invocation that started it,
 * one bounded chunk per message (docs/architecture.md, "Background work").
 * A chunk that leaves work behind enqueues the next one; a failed chunk is
 * retried with a growing delay.
 */
export async function handleBackground(batch: MessageBatch<unknown>, env: Env): Promise<void> {
  const deps = createDeps(env);
  for (const message of batch.messages) {
    const parsed = backgroundMessage.safeParse(message.body);
    if (!parsed.success) {
      logError("not a background message", describeZodError(parsed.error, "message"), { messageId: message.id });
      message.ack();
      continue;
    }
    try {
      const body = parsed.data;
      if (body.kind === "reindex") {
        const { applied, failed } = await applyIndexWork(deps, { keys: body.keys });
        logInfo({ queue: batch.queue, kind: body.kind, applied: applied.length, failed: failed.length });
        // KV refused some keys: try again shortly (their rows stay due for the sweep too).
        if (failed.length > 0) {
          message.retry({ delaySeconds: Math.min(60, 2 ** message.attempts) });
          continue;
        }
      } else if (body.kind === "retention") {
        const { pruned, more } = await pruneExpired(deps.db, new Date());
        logInfo({ queue: batch.queue, kind: body.kind, pruned, more });
        if (more) await deps.backgroundQueue.send({ kind: "retention" });
      } else {
        const { more } = await purgeExpiredEphemeral(deps, new Date());
        if (more) await deps.backgroundQueue.send({ kind: "purge" });
      }
      message.ack();
    } catch (err) {
      logError("background work failed; retried", err, { messageId: message.id, attempts: message.attempts });
      message.retry({ delaySeconds: Math.min(300, 2 ** message.attempts) });
    }
  }
}
