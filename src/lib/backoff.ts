/**
 * How long a retry waits: `base` doubled per attempt, at most `cap`
 * (`attempt` 0 waits `base`; units are the caller's: ms or s). The one
 * backoff of the Worker and the objects: queue retries, the inline index work,
 * the person object's alarm retrying its deliveries, and, as SQL
 * (`backoffSql`, db/sql.ts), the rows a sweep takes again later.
 */
export type Backoff = { base: number; cap: number };

/** The wait before retry number `attempt` (`base * 2 ** attempt`, at most `cap`). */
export function backoff(attempt: number, { base, cap }: Backoff): number {
  return Math.min(cap, base * 2 ** Math.min(attempt, doublings({ base, cap })));
}

/** The attempts after which the wait no longer grows: past them it is `cap` (keeps `2 ** n` finite). */
export function doublings({ base, cap }: Backoff): number {
  return Math.max(0, Math.ceil(Math.log2(cap / base)));
}
