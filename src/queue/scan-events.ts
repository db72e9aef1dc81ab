import { createDeps } from "../services/create-deps";
import { ScanEventBatch } from "../domain/scan-events";
import { logError } from "../lib/log";
import { describeZodError } from "../lib/errors";
import { applyScanEvents } from "../services/scans";

/**
 * `scan-events`: each message is (a slice of) a batch posted to
 * `POST /internal/scan-events`, applied in order with a few D1 batches per
 * message (see `applyScanEvents`). Applying is idempotent, so a message that
 * fails halfway is simply retried from its first event.
 */
export async function handleScanEvents(batch: MessageBatch<unknown>, env: Env): Promise<void> {
  const deps = createDeps(env);
  for (const message of batch.messages) {
    const parsed = ScanEventBatch.safeParse(message.body);
    if (!parsed.success) {
      console.error(
        JSON.stringify({
          level: "error",
          queue: batch.queue,
          messageId: message.id,
          error: `not a scan event batch: ${describeZodError(parsed.error, "message")}`,
        }),
      );
      message.ack();
      continue;
    }
    try {
      const applied = await applyScanEvents(deps, parsed.data);
      console.log(JSON.stringify({ level: "info", queue: batch.queue, messageId: message.id, applied }));
      message.ack();
    } catch (err) {
      logError("applying scan events failed; retried", err, {
        queue: batch.queue,
        messageId: message.id,
        attempts: message.attempts,
      });
      message.retry({ delaySeconds: 30 });
    }
  }
}
