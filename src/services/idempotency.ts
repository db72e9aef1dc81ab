import { and, eq, isNull, lt, or } from "drizzle-orm";
import type { Db } from "../db/client";
import { pruneOlderThan, type PruneResult } from "../db/prune";
import { companyIdempotencyKeys as keys } from "../db/schema";
import {
  ABANDONED_AFTER_MS,
  judge,
  KEEP_KEYS_MS,
  type AnswerToKeep,
  type IdempotencyClaim,
} from "../domain/idempotency";
import type { Deps } from "./deps";

/**
 * Where an Idempotency-Key is kept (docs/decisions.md, "Idempotency keys"):
 * in the person's object for a person's writes, in D1 for a company's. Both
 * claim atomically, so of two requests with one key only one goes ahead.
 * The person's object also counts its keys and charges what it keeps to the
 * person's day (docs/security.md, "What a stranger can cost").
 */
export type IdempotencyStore = {
  claim(key: string, fingerprint: string): Promise<IdempotencyClaim>;
  settle(key: string, fingerprint: string, answer: AnswerToKeep | null): Promise<void>;
};

export const personKeys = ({ objects }: Deps, personId: number): IdempotencyStore => ({
  claim: (key, fingerprint) => objects.of(personId).claimIdempotencyKey(key, fingerprint),
  settle: (key, fingerprint, answer) => objects.of(personId).settleIdempotencyKey(key, fingerprint, answer),
});

/**
 * A company's keys, per caller. A claim is one upsert that takes the key
 * only when it is free (absent, expired or abandoned): D1 runs statements one
 * at a time, so two claims of one key cannot both take it. When it was not
 * taken, one read says why.
 */
export const companyKeys = ({ db }: Deps, companyId: number, personId: number, now = Date.now): IdempotencyStore => {
  const row = (key: string) => and(eq(keys.companyId, companyId), eq(keys.personId, personId), eq(keys.key, key));
  return {
    async claim(key, fingerprint) {
      const at = now();
      const fresh = { fingerprint, claimedAt: at, status: null, body: null, contentType: null, location: null };
      const taken = await db
        .insert(keys)
        .values({ companyId, personId, key, ...fresh })
        .onConflictDoUpdate({
          target: [keys.companyId, keys.personId, keys.key],
          set: fresh,
          setWhere: or(
            lt(keys.claimedAt, at - KEEP_KEYS_MS),
            and(isNull(keys.status), lt(keys.claimedAt, at - ABANDONED_AFTER_MS)),
          ),
        })
        .returning({ claimedAt: keys.claimedAt })
        .all();
      if (taken.length > 0) return { state: "new" };
      const stored = await db.select().from(keys).where(row(key)).get();
      const answer =
        stored && stored.status !== null
          ? {
              status: stored.status,
              body: stored.body ?? "",
              contentType: stored.contentType,
              location: stored.location,
            }
          : null;
      // Released between the two statements: a retry claims it.
      return judge(stored && { ...stored, answer }, fingerprint, at) ?? { state: "busy" };
    },
    async settle(key, fingerprint, answer) {
      const mine = and(row(key), eq(keys.fingerprint, fingerprint), isNull(keys.status));
      if (!answer) {
        await db.delete(keys).where(mine).run();
        return;
      }
      // A company's answers are never activity records: the body is kept.
      const { activityId: _, ...copy } = answer;
      await db.update(keys).set(copy).where(mine).run();
    },
  };
};

/** The daily retention's rule: company keys claimed more than 24 h ago go. */
export const pruneCompanyKeys = (db: Db, now: Date, maxStatements: number): Promise<PruneResult> =>
  pruneOlderThan(db, { table: keys, column: keys.claimedAt, cutoff: now.getTime() - KEEP_KEYS_MS, maxStatements });
