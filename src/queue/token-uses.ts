import { backoff } from "../lib/backoff";
import { logError, logInfo } from "../lib/log";
import { createDeps } from "../services/create-deps";
import type { TokenUseMessage } from "../domain/queue-messages";
import { recordTokenUses } from "../services/tokens";

const isUse = (body: unknown): body is TokenUseMessage =>
  typeof body === "object" &&
  body !== null &&
  typeof (body as TokenUseMessage).h === "string" &&
  Number.isFinite((body as TokenUseMessage).at);

/**
 * `token-uses`: the day's first use of each token (sent by `verifyToken`, services/tokens.ts),
 * up to 100 a batch, written to D1 in one statement (docs/architecture.md, "Tokens"). A batch
 * that fails is retried whole: the update is conditional, so a use written twice changes nothing.
 */
export async function handleTokenUses(batch: MessageBatch<unknown>, env: Env): Promise<void> {
  const uses = batch.messages.map((message) => message.body).filter(isUse);
  try {
    const { tokens } = await recordTokenUses(createDeps(env), uses, new Date());
    logInfo({ queue: batch.queue, uses: uses.length, tokens });
    batch.ackAll();
  } catch (err) {
    const attempts = Math.max(...batch.messages.map((message) => message.attempts));
    logError("recording token uses failed; retried", err, { uses: uses.length, attempts });
    batch.retryAll({ delaySeconds: backoff(attempts, { base: 1, cap: 300 }) });
  }
}
