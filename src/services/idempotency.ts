import { and, eq } from "drizzle-orm";
import type { Db } from "../db/client";
import { pruneOlderThan, type PruneResult } from "../db/prune";
import { companyIdempotencyKeys as keys } from "../db/schema";
import { judge, KEEP_KEYS_MS, type AnswerToKeep, type IdempotencyClaim } from "../domain/idempotency";
import type { Deps } from "./deps";

/**
 * Where an Idempotency-Key is kept (docs/decisions.md, "Idempotency keys"):
 * in the caller's own object, for a person's writes and a company's alike (a
 * company's under the company's name). A claim is atomic there, so of two
 * requests with one key only one goes ahead; the object counts its keys and
 * charges what it keeps to the person's day (docs/security.md, "What a
 * stranger can cost").
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
 * A company's keys, per caller: kept in the caller's own object beside their person keys, under
 * the company's name (`company <id>: <key>`, a space no key holds), so they cost the caller's day
 * like any key (1,000 new keys, the kept bytes charged). A key claimed in D1 by an older version
 * (`company_idempotency_keys`, 24 h) still answers for itself: a claim reads it first (one read).
 */
export const companyKeys = (deps: Deps, companyId: number, personId: number, now = Date.now): IdempotencyStore => {
  const mine = personKeys(deps, personId);
  const scoped = (key: string) => `company ${companyId}: ${key}`;
  return {
    async claim(key, fingerprint) {
      // A key the older version claimed answers first: its replay costs nothing of the caller's day.
      const earlier = await claimedInD1(deps.db, companyId, personId, key, fingerprint, now());
      return earlier ?? mine.claim(scoped(key), fingerprint);
    },
    settle: (key, fingerprint, answer) => mine.settle(scoped(key), fingerprint, answer),
  };
};

/** What a key claimed in D1 within 24 h says now (replay, 422, 409), or null when it says nothing. */
async function claimedInD1(
  db: Db,
  companyId: number,
  personId: number,
  key: string,
  fingerprint: string,
  at: number,
): Promise<IdempotencyClaim | null> {
  const stored = await db
    .select()
    .from(keys)
    .where(and(eq(keys.companyId, companyId), eq(keys.personId, personId), eq(keys.key, key)))
    .get();
  if (!stored) return null;
  const answer =
    stored.status !== null
      ? { status: stored.status, body: stored.body ?? "", contentType: stored.contentType, location: stored.location }
      : null;
  // Past 24 h, or abandoned (no answer after a minute): judge says nothing, the key is free.
  return judge({ ...stored, answer }, fingerprint, at);
}

/** The daily retention's rule: company keys claimed more than 24 h ago go. */
export const pruneCompanyKeys = (db: Db, now: Date, maxStatements: number): Promise<PruneResult> =>
  pruneOlderThan(db, { table: keys, column: keys.claimedAt, cutoff: now.getTime() - KEEP_KEYS_MS, maxStatements });
