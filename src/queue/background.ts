import { backoff } from "../lib/backoff";
import { describeZodError } from "../lib/errors";
import { logError, logInfo } from "../lib/log";
import { runBackgroundJob } from "../services/background-jobs";
import { createDeps } from "../services/create-deps";
import { backgroundMessage } from "../domain/queue-messages";

/**
 * `background`: work that continues past the invocation that started it,
 * one bounded chunk per message (docs/architecture.md, "Background work").
 * A chunk that was full enqueues the next one (`runBackgroundJob`'s `next`);
 * a failed chunk is retried with a growing delay, and after 10 tries its
 * message goes to `background-dlq`, whose consumer keeps its work due
 * (src/queue/dead-letters.ts).
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
      const chunk = await runBackgroundJob(deps, body, new Date());
      logInfo({ queue: batch.queue, kind: body.kind, ...chunk.done, continues: chunk.next !== undefined });
      if (chunk.next) await deps.backgroundQueue.send(chunk.next);
      if (chunk.retry) {
        message.retry({ delaySeconds: backoff(message.attempts, { base: 1, cap: 60 }) });
        continue;
      }
      message.ack();
    } catch (err) {
      logError("background work failed; retried", err, { messageId: message.id, attempts: message.attempts });
      message.retry({ delaySeconds: backoff(message.attempts, { base: 1, cap: 300 }) });
    }
  }
}
