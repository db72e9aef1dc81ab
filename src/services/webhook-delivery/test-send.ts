import { and, eq, sql } from "drizzle-orm";
import { webhookDeliveries, webhooks } from "../../db/schema";
import { TEST_EVENT } from "../../domain/events";
import { refusal, type Answer } from "../../lib/answer";
import { WriteBatch } from "../outbox";
import type { Deps } from "../deps";
import { handOverFinished } from "./archive";
import { deliveryColumns, finishStatement, recordAttempt, webhookColumns, type Delivery } from "./records";
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
  const ofCompany = and(eq(webhooks.companyId, companyId), eq(webhooks.id, webhookId));
  const webhook = await db.select(webhookColumns).from(webhooks).where(ofCompany).get();
  const gone = refusal(404, `webhook ${webhookId} does not exist`);
  if (!webhook) return gone;
  const id = crypto.randomUUID();
  const payload = { webhook_id: webhookId };
  // The history entry is a command's write, made only while the webhook still exists (a DELETE may
  // have come since the read above: then nothing is written and the answer is the same 404).
  const entry = new WriteBatch(deps, now);
  const inserted = entry.add(
    db
      .insert(webhookDeliveries)
      .select(
        db
          // drizzle wants every column, in the table's order.
          .select({
            id: sql<string>`${id}`.as("id"),
            companyId: webhooks.companyId,
            webhookId: webhooks.id,
            event: sql<string>`${TEST_EVENT}`.as("event"),
            payload: sql<string>`${JSON.stringify(payload)}`.as("payload"),
            rendered: sql<boolean>`1`.as("rendered"),
            status: sql<string>`'pending'`.as("status"),
            result: sql<string>`''`.as("result"),
            attempts: sql<number>`0`.as("attempts"),
            deliveredAt: sql<Date | null>`null`.as("delivered_at"),
            dueAt: sql<number>`${now.getTime()}`.as("due_at"),
            handoverAfter: sql<number>`0`.as("handover_after"),
            createdAt: sql<Date>`${now.getTime()}`.as("created_at"),
            updatedAt: sql<Date>`${now.getTime()}`.as("updated_at"),
          })
          .from(webhooks)
          .where(ofCompany),
      )
      .returning(deliveryColumns),
  );
  const [written] = (await entry.commit()).results[inserted] as Omit<Delivery, "webhook">[];
  if (!written) return gone;
  // Sent with the webhook as read: the test was asked of it while it existed.
  const row: Delivery = { ...written, webhook };
  const answer = await send(deps, row, webhook, now);
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
