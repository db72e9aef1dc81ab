import { sql } from "drizzle-orm";
import { deadLetters, indexWork, webhookDeliveries } from "../db/schema";
import { backoffSql, inList } from "../db/sql";
import { backgroundMessage, deliveryMessage } from "../domain/queue-messages";
import type { Deps } from "./deps";

/**
 * Dead letters (docs/architecture.md, "Dead letters"): a message a queue
 * gave up on is never just logged. What it stood for stays due:
 *
 * - a `reindex` message: its `index_work` rows are the durable record; they
 *   are made due at once, and the minute sweep applies them;
 * - a webhook delivery: its history row goes back to `pending` (attempts and
 *   last result kept, its retry's time too), and the outbox sweep enqueues it again;
 * - anything else (a scan-event batch, a background job's chunk): recorded
 *   in `dead_letters` and redriven from there, with a growing delay, until
 *   its work succeeds.
 */

/** What became of a dead letter: which durable row keeps its work due. */
export type Kept = "index work due" | "delivery due" | "recorded";

/** The first redrive waits this long; each further one twice as long, up to `REDRIVE_MAX_DELAY_MS`. */
export const REDRIVE_FIRST_DELAY_MS = 5 * 60_000;
export const REDRIVE_MAX_DELAY_MS = 6 * 3600_000;

/**
 * Keeps the work of a message that dead-lettered on `queue` (the queue it was
 * sent to, not its DLQ) due, durably. Idempotent: a redelivered DLQ message
 * (same `messageId`) changes nothing more.
 */
export async function keepDeadLetter(
  { db }: Deps,
  queue: string,
  message: { id: string; body: unknown },
  now: Date,
): Promise<Kept> {
  const t = now.getTime();
  if (queue === "background") {
    const parsed = backgroundMessage.safeParse(message.body);
    if (parsed.success && parsed.data.kind === "reindex") {
      // The rows are the record: due now (the sweep, every minute, takes the oldest due first).
      if (parsed.data.keys) {
        await db.run(
          sql`update ${indexWork} set due_at = min(due_at, ${t}) where ${inList(indexWork.key, parsed.data.keys)}`,
        );
      }
      return "index work due";
    }
  }
  if (queue === "webhook-deliveries") {
    const parsed = deliveryMessage.safeParse(message.body);
    if (parsed.success) {
      const { deliveryId } = parsed.data;
      // Back to pending, attempts and last result kept, due when its retry was (now, if that passed): the
      // outbox sweep enqueues it again 5 minutes after that, and the delivery still gets at most its eight
      // attempts, none before its time (the queue's own count, spent by its retries, gave up on it early).
      await db.run(
        sql`update ${webhookDeliveries} set status = 'pending', updated_at = ${t}, due_at = max(due_at, ${t})
            where id = ${deliveryId} and status in ('pending', 'dispatched')`,
      );
      return "delivery due";
    }
  }
  await db.run(sql`
    insert into ${deadLetters} (queue, message_id, body, attempts, created_at, due_at)
    values (${queue}, ${message.id}, ${JSON.stringify(message.body ?? null)}, 0, ${t}, ${t + REDRIVE_FIRST_DELAY_MS})
    on conflict (message_id) do nothing`);
  return "recorded";
}

export type DeadLetter = { id: number; queue: string; body: unknown; attempts: number };

/**
 * Claims the oldest due dead letter for one redrive: its next try is pushed
 * back (by the delay its attempt count earns) before it runs, so a redrive
 * that dies midway is retried later, never lost, and two redrives never run
 * the same letter at once.
 */
export async function claimDeadLetter({ db }: Deps, now: Date): Promise<DeadLetter | null> {
  const t = now.getTime();
  const [row] = await db.all<{ id: number; queue: string; body: string; attempts: number }>(sql`
    update ${deadLetters}
    set attempts = attempts + 1,
        due_at = ${t} + ${backoffSql(sql`attempts`, { base: REDRIVE_FIRST_DELAY_MS, cap: REDRIVE_MAX_DELAY_MS })}
    where id = (select id from ${deadLetters} where due_at <= ${t} order by due_at limit 1)
    returning id, queue, body, attempts`);
  if (!row) return null;
  return { id: row.id, queue: row.queue, body: JSON.parse(row.body) as unknown, attempts: row.attempts };
}

/** The redrive's outcome: done (the row goes), or failed (kept, with the error, for its next try). */
export async function finishDeadLetter({ db }: Deps, id: number, error: string | null) {
  if (error === null) await db.run(sql`delete from ${deadLetters} where id = ${id}`);
  else await db.run(sql`update ${deadLetters} set last_error = ${error.slice(0, 500)} where id = ${id}`);
}

/** Whether a dead letter is due for a redrive now. */
export async function deadLetterDue({ db }: Deps, now: Date): Promise<boolean> {
  const row = await db.get<{ id: number } | undefined>(
    sql`select id from ${deadLetters} where due_at <= ${now.getTime()} limit 1`,
  );
  return row !== undefined;
}
