import { and, eq, isNotNull, isNull, or, sql } from "drizzle-orm";
import type { Db } from "../../db/client";
import { webhooks } from "../../db/schema";

/**
 * When a failed delivery is tried again, and when a webhook is given up on
 * (docs/webhooks.md, "Retries and what your answer does").
 */

/** Waits before attempts 2…8; after the 8th attempt the delivery has failed. */
export const RETRY_DELAYS_SECONDS = [10, 60, 300, 1800, 7200, 21600, 43200] as const;
export const MAX_ATTEMPTS = RETRY_DELAYS_SECONDS.length + 1;
/** A `Retry-After` longer than this is cut to it (also the longest delay a queue message can take). */
export const MAX_RETRY_AFTER_SECONDS = 12 * 3600;
/** A webhook whose attempts have all failed for this long is deactivated. */
export const FAILING_LIMIT_MS = 5 * 24 * 3600 * 1000;

export const DISABLED_410 = "endpoint answered 410";
export const DISABLED_FAILING = "failing for 5 days";

/** `Retry-After` in seconds (delay-seconds or an HTTP date), at most 12 h; null when absent or unreadable. */
export function retryAfterSeconds(value: string | null, now: Date): number | null {
  if (!value) return null;
  const trimmed = value.trim();
  let seconds: number;
  if (/^\d+$/.test(trimmed)) seconds = Number(trimmed);
  else {
    const at = Date.parse(trimmed);
    if (Number.isNaN(at)) return null;
    seconds = Math.ceil((at - now.getTime()) / 1000);
  }
  return Math.min(Math.max(seconds, 0), MAX_RETRY_AFTER_SECONDS);
}

/**
 * The webhook's side of an attempt, as a statement that writes the row only
 * when the attempt changes it (docs/performance.md, "Webhook bookkeeping"):
 * a success clears the failing clock; a failure starts it if needed; a 410,
 * or a failure 5 days after the clock started, deactivates the webhook with
 * its reason (unless already inactive). Null when there is nothing to write:
 * a success while the webhook was not failing (`failingSince` as the
 * delivery read it). Its rows are those it changed: none when it changed
 * nothing, so an empty answer means the webhook is still active.
 */
export function webhookHealth(
  db: Db,
  webhook: { id: number; failingSince: Date | null },
  ok: boolean,
  gone: boolean,
  now: Date,
) {
  if (ok) {
    if (webhook.failingSince === null) return null;
    return db
      .update(webhooks)
      .set({ failingSince: null, updatedAt: sql`${webhooks.updatedAt}` })
      .where(and(eq(webhooks.id, webhook.id), isNotNull(webhooks.failingSince)))
      .returning({ active: webhooks.active });
  }
  const since = sql`coalesce(${webhooks.failingSince}, ${now.getTime()})`;
  const deactivate = gone ? sql`1` : sql`${since} <= ${now.getTime() - FAILING_LIMIT_MS}`;
  const reason = gone ? DISABLED_410 : DISABLED_FAILING;
  // Every right-hand side reads the row as it was before this statement.
  return (
    db
      .update(webhooks)
      .set({
        failingSince: sql`${since}`,
        active: sql`case when ${deactivate} then 0 else ${webhooks.active} end`,
        disabledReason: sql`case when ${webhooks.active} and ${deactivate} then ${reason} else ${webhooks.disabledReason} end`,
        updatedAt: sql`case when ${webhooks.active} and ${deactivate} then ${now.getTime()} else ${webhooks.updatedAt} end`,
      })
      // Only a row this failure changes: its clock not started yet, or an active webhook it deactivates.
      .where(
        and(eq(webhooks.id, webhook.id), or(isNull(webhooks.failingSince), and(eq(webhooks.active, true), deactivate))),
      )
      .returning({ active: webhooks.active })
  );
}
