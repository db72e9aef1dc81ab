/**
 * Idempotency-Key (docs/decisions.md, "Idempotency keys"): the rule both
 * stores follow — the person's object for a person's writes, D1 for a
 * company's. A key is kept 24 h; a claim not settled within
 * `ABANDONED_AFTER_MS` (its request died between the write and the record)
 * may be claimed again.
 */
export const KEEP_KEYS_MS = 24 * 3600 * 1000;
export const ABANDONED_AFTER_MS = 60 * 1000;
/** An answer larger than this is not kept (the key is released): the stores' rows stay far under 2 MB. */
export const MAX_KEPT_ANSWER_BYTES = 1024 * 1024;

/** The first answer to a key, as it is given again. */
export type KeptAnswer = { status: number; body: string; contentType: string | null; location: string | null };

/** What a claim found: go ahead (`new`), the first answer (`replay`), another body (`mismatch`), or the first still running (`busy`). */
export type IdempotencyClaim =
  { state: "new" } | { state: "replay"; answer: KeptAnswer } | { state: "mismatch" } | { state: "busy" };

/** A stored key as both stores hold it; `answer` null while its request runs. */
export type StoredKey = { fingerprint: string; claimedAt: number; answer: KeptAnswer | null };

/** Judges an existing key for a new request; `null`: there is none worth keeping (absent, expired or abandoned). */
export function judge(stored: StoredKey | undefined, fingerprint: string, now: number): IdempotencyClaim | null {
  if (!stored || stored.claimedAt <= now - KEEP_KEYS_MS) return null;
  if (!stored.answer && stored.claimedAt <= now - ABANDONED_AFTER_MS) return null;
  if (stored.fingerprint !== fingerprint) return { state: "mismatch" };
  return stored.answer ? { state: "replay", answer: stored.answer } : { state: "busy" };
}
