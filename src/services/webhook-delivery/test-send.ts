import { and, eq } from "drizzle-orm";
import { webhookDeliveries, webhooks } from "../../db/schema";
import { TEST_EVENT } from "../../domain/events";
import { refusal, type Answer } from "../../lib/answer";
import { WriteBatch } from "../outbox";
import type { Deps } from "../deps";
import { handOverFinished } from "./archive";
import { finishStatement, loadDelivery, recordAttempt } from "./records";
import type { AttemptResult } from "./records";
import { isSuccess, send } from "./sending";

/**
 * `POST /webhooks/{id}/test`: records a `webhook:test` entry in the history
 * and sends it now, once, whether or not the webhook is active. A test does
 * not change the webhook (no deactivation, no failing clock). A 404 when the
 * company has no such webhook. Once sent, the entry is handed to the
 * company's object like any finished delivery.
 */
export async function sendTestEvent(
  deps: Deps,
  companyId: number,
  webhookId: number,
  now = new Date(),
): Promise<Answer<{ status: "success" | "failed"; result: AttemptResult; history_id: string }>> {
  const { db } = deps;
  const webhook = await db
    .select({ id: webhooks.id })
    .from(webhooks)
    .where(and(eq(webhooks.companyId, companyId), eq(webhooks.id, webhookId)))
    .get();
  if (!webhook) return refusal(404, `webhook ${webhookId} does not exist`);
  const id = crypto.randomUUID();
  // The history entry is a command's write (nothing follows it today: the send below is the test itself).
  const entry = new WriteBatch(deps, now);
  entry.add(
    db.insert(webhookDeliveries).values({
      id,
      companyId,
      webhookId,
      event: TEST_EVENT,
      payload: { webhook_id: webhookId },
      status: "pending",
      createdAt: now,
      updatedAt: now,
      dueAt: now.getTime(),
    }),
  );
  await entry.commit();
  const row = (await loadDelivery(db, id))!;
  const answer = await send(deps, row, row.webhook!, now);
  const status = isSuccess(answer) ? "success" : "failed";
  await db.batch([
    recordAttempt(db, id, now, answer),
    finishStatement(db, id, {
      status,
      result: answer.result,
      attempts: 1,
      ...(status === "success" ? { deliveredAt: now } : {}),
    }),
  ]);
  // Finished: its company's object keeps it from now on (archive.ts; the sweep if this fails).
  await handOverFinished(deps, { ids: [id] });
  return { ok: true, status, result: answer.result, history_id: id };
}
