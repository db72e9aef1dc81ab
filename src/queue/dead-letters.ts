import { backoff } from "../lib/backoff";
import { logError } from "../lib/log";
import { keepDeadLetter } from "../services/dead-letters";
import { createDeps } from "../services/create-deps";

/**
 * Every `<queue>-dlq`: a message its queue gave up on (and any queue no
 * consumer is registered for, whose messages are kept the same way). Its work is kept due
 * durably (`keepDeadLetter`: the index work or the delivery row stays due,
 * anything else is recorded in `dead_letters` and redriven), and the line
 * logged names the message, not its content. If D1 cannot take it now, the
 * message is retried (up to 100 times, wrangler.toml) with a growing delay.
 */
export async function handleDeadLetters(batch: MessageBatch<unknown>, env: Env): Promise<void> {
  const deps = createDeps(env);
  const dead = /-dlq$/.test(batch.queue);
  const queue = batch.queue.replace(/-dlq$/, "");
  for (const message of batch.messages) {
    try {
      const kept = await keepDeadLetter(deps, queue, message, new Date());
      console.error(
        JSON.stringify({
          level: "error",
          error: dead ? "dead-lettered message" : "no consumer handles this queue",
          queue: batch.queue,
          messageId: message.id,
          attempts: message.attempts,
          kept,
        }),
      );
      message.ack();
    } catch (err) {
      logError("keeping a dead letter failed; retried", err, { queue: batch.queue, messageId: message.id });
      message.retry({ delaySeconds: backoff(message.attempts, { base: 30, cap: 3600 }) });
    }
  }
}
