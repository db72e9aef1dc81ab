import { eq, lt, sql } from "drizzle-orm";
import type { DrizzleSqliteDODatabase } from "drizzle-orm/durable-sqlite";
import { createdActivityBody } from "../../domain/activity";
import {
  judge,
  KEEP_KEYS_MS,
  type AnswerToKeep,
  type IdempotencyClaim,
  type KeptAnswer,
} from "../../domain/idempotency";
import * as budgets from "./budgets";
import { utf8Bytes } from "./budgets";
import { activityDays, feed, idempotencyKeys } from "./schema";

/**
 * The Idempotency-Key store of one person's writes (docs/decisions.md,
 * "Idempotency keys"). Each function runs inside the object's
 * `transactionSync`; requests to one object run one at a time, so a claim is
 * atomic: of two requests with one key, the second finds the first's claim.
 *
 * What it keeps costs the person (docs/security.md, "What a stranger can
 * cost"): at most `MAX_KEYS_PER_DAY` new keys a day, and every kept row's
 * bytes charged to the day's bytes of their own activity budget. An answer
 * that is an activity record (POST /apps/buzz/activity, a chat retried with
 * its `message_id` under a new key included) is kept as a reference to its
 * feed row, rendered again on a replay, never as a second copy of the message.
 */

type Db = DrizzleSqliteDODatabase;
type KeyRow = typeof idempotencyKeys.$inferSelect;

/** Claims `key` for a request with `fingerprint`, or says why not. */
export function claim(db: Db, key: string, fingerprint: string, now: number): IdempotencyClaim {
  const row = db.select().from(idempotencyKeys).where(eq(idempotencyKeys.key, key)).get();
  const answer = row && row.status !== null ? keptAnswer(db, row, row.status) : null;
  // A kept reference whose record is gone (the development wipe) is no answer: the key is free.
  const stored =
    row && answer !== undefined ? { fingerprint: row.fingerprint, claimedAt: row.claimedAt, answer } : undefined;
  const found = judge(stored, fingerprint, now);
  if (found) return found;
  const refused = budgets.keyFitsToday(db, now, utf8Bytes(key) + utf8Bytes(fingerprint));
  if (refused) return { state: "spent", message: refused.message, retryAfter: refused.retryAfter };
  budgets.countKey(db, now);
  const fresh = {
    fingerprint,
    claimedAt: now,
    status: null,
    body: null,
    contentType: null,
    location: null,
    activityId: null,
  };
  db.insert(idempotencyKeys)
    .values({ key, ...fresh })
    .onConflictDoUpdate({ target: idempotencyKeys.key, set: fresh })
    .run();
  return { state: "new" };
}

/**
 * Keeps the first answer to the claim of `key` by `fingerprint`, charging its
 * bytes to today's budget, or (`answer` null) releases the claim. An activity
 * answer the feed row renders byte for byte is kept as that row's id.
 */
export function settle(db: Db, key: string, fingerprint: string, answer: AnswerToKeep | null, now: number): void {
  const mine = sql`${idempotencyKeys.key} = ${key} and ${idempotencyKeys.fingerprint} = ${fingerprint} and ${idempotencyKeys.status} is null`;
  if (!answer) {
    db.delete(idempotencyKeys).where(mine).run();
    return;
  }
  const { activityId, ...copy } = answer;
  const byReference = activityId !== undefined && renderActivity(db, activityId) === copy.body;
  const kept = byReference ? { ...copy, body: null, activityId } : { ...copy, activityId: null };
  const settled = db.update(idempotencyKeys).set(kept).where(mine).returning({ key: idempotencyKeys.key }).all();
  if (settled.length === 0) return;
  const bytes = [key, fingerprint, kept.body, kept.contentType, kept.location].reduce(
    (n, text) => n + utf8Bytes(text),
    0,
  );
  budgets.charge(db, activityDays, budgets.utcDay(now), 0, bytes);
}

/** Deletes at most `limit` keys claimed more than 24 h ago; answers how many. */
export function prune(db: Db, now: number, limit: number): number {
  return db
    .delete(idempotencyKeys)
    .where(
      sql`rowid in (select rowid from ${idempotencyKeys} where ${lt(idempotencyKeys.claimedAt, now - KEEP_KEYS_MS)} limit ${limit})`,
    )
    .returning({ key: idempotencyKeys.key })
    .all().length;
}

/** The answer a settled row gives again; undefined when it refers to a record no longer in the feed. */
function keptAnswer(db: Db, row: KeyRow, status: number): KeptAnswer | undefined {
  const body = row.activityId === null ? (row.body ?? "") : renderActivity(db, row.activityId);
  return body === undefined ? undefined : { status, body, contentType: row.contentType, location: row.location };
}

/** The feed record `id` as POST /apps/buzz/activity answers it; undefined when it is not in the feed. */
function renderActivity(db: Db, id: number): string | undefined {
  const row = db.select().from(feed).where(eq(feed.id, id)).get();
  return row && createdActivityBody(row);
}
