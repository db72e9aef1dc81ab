import { eq, lt, sql } from "drizzle-orm";
import type { DrizzleSqliteDODatabase } from "drizzle-orm/durable-sqlite";
import { judge, KEEP_KEYS_MS, type IdempotencyClaim, type KeptAnswer } from "../../domain/idempotency";
import { idempotencyKeys } from "./schema";

/**
 * The Idempotency-Key store of one person's writes (docs/decisions.md,
 * "Idempotency keys"). Each function runs inside the object's
 * `transactionSync`; requests to one object run one at a time, so a claim is
 * atomic: of two requests with one key, the second finds the first's claim.
 */

/** Claims `key` for a request with `fingerprint`, or says why not. */
export function claim(db: DrizzleSqliteDODatabase, key: string, fingerprint: string, now: number): IdempotencyClaim {
  const row = db.select().from(idempotencyKeys).where(eq(idempotencyKeys.key, key)).get();
  const stored = row && {
    fingerprint: row.fingerprint,
    claimedAt: row.claimedAt,
    answer:
      row.status === null
        ? null
        : { status: row.status, body: row.body ?? "", contentType: row.contentType, location: row.location },
  };
  const found = judge(stored, fingerprint, now);
  if (found) return found;
  const fresh = { fingerprint, claimedAt: now, status: null, body: null, contentType: null, location: null };
  db.insert(idempotencyKeys)
    .values({ key, ...fresh })
    .onConflictDoUpdate({ target: idempotencyKeys.key, set: fresh })
    .run();
  return { state: "new" };
}

/** Keeps the first answer to the claim of `key` by `fingerprint`, or (`answer` null) releases the claim. */
export function settle(db: DrizzleSqliteDODatabase, key: string, fingerprint: string, answer: KeptAnswer | null): void {
  const mine = sql`${idempotencyKeys.key} = ${key} and ${idempotencyKeys.fingerprint} = ${fingerprint} and ${idempotencyKeys.status} is null`;
  if (!answer) {
    db.delete(idempotencyKeys).where(mine).run();
    return;
  }
  db.update(idempotencyKeys).set(answer).where(mine).run();
}

/** Deletes at most `limit` keys claimed more than 24 h ago; answers how many. */
export function prune(db: DrizzleSqliteDODatabase, now: number, limit: number): number {
  return db
    .delete(idempotencyKeys)
    .where(
      sql`rowid in (select rowid from ${idempotencyKeys} where ${lt(idempotencyKeys.claimedAt, now - KEEP_KEYS_MS)} limit ${limit})`,
    )
    .returning({ key: idempotencyKeys.key })
    .all().length;
}
