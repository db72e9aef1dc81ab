/**
 * Idempotency-Key (docs/decisions.md, "Idempotency keys"): the rule the
 * caller's object follows, and the company keys an older version kept in D1
 * (read until they expire). A key is kept 24 h; a claim not settled within
 * `ABANDONED_AFTER_MS` (its request died between the write and the record)
 * may be claimed again.
 */
export const KEEP_KEYS_MS = 24 * 3600 * 1000;
export const ABANDONED_AFTER_MS = 60 * 1000;
/** An answer larger than this is not kept (the key is released): the stores' rows stay far under 2 MB. */
export const MAX_KEPT_ANSWER_BYTES = 1024 * 1024;
/** Keys a person may claim per UTC day (docs/security.md, "What a stranger can cost"); the 1,001st is a 429. */
export const MAX_KEYS_PER_DAY = 1_000;

/** The first answer to a key, as it is given again. */
export type KeptAnswer = { status: number; body: string; contentType: string | null; location: string | null };

/**
 * The answer to keep, as the middleware hands it over. `activityId`: the
 * answer is that activity record as POST /apps/buzz/activity renders it, so
 * the person's object may keep a reference to its feed row instead of a
 * second copy of the body (docs/decisions.md, "Idempotency keys").
 */
export type AnswerToKeep = KeptAnswer & { activityId?: number };

/**
 * What a claim found: go ahead (`new`), the first answer (`replay`), another
 * body (`mismatch`), the first still running (`busy`), or (a person's keys)
 * no new key today: the day's keys or bytes are spent (`spent`, a 429).
 */
export type IdempotencyClaim =
  | { state: "new" }
  | { state: "replay"; answer: KeptAnswer }
  | { state: "mismatch" }
  | { state: "busy" }
  | { state: "spent"; message: string; retryAfter: number };

/** A stored key as both stores hold it; `answer` null while its request runs. */
export type StoredKey = { fingerprint: string; claimedAt: number; answer: KeptAnswer | null };

/** Judges an existing key for a new request; `null`: there is none worth keeping (absent, expired or abandoned). */
export function judge(stored: StoredKey | undefined, fingerprint: string, now: number): IdempotencyClaim | null {
  if (!stored || stored.claimedAt <= now - KEEP_KEYS_MS) return null;
  if (!stored.answer && stored.claimedAt <= now - ABANDONED_AFTER_MS) return null;
  if (stored.fingerprint !== fingerprint) return { state: "mismatch" };
  return stored.answer ? { state: "replay", answer: stored.answer } : { state: "busy" };
}
