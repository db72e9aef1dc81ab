/*
 * KV trouble is no D1 storm (docs/architecture.md, "When KV fails"): when a KV read fails, a path that
 * would answer from D1 instead asks this isolate's gate first. It lets one fallback through per second
 * (plus up to 250 ms of jitter, so isolates that failed together do not retry together); the others answer
 * from what they have — a lookup fails closed (untrusted, `Lookup-Problem: index unavailable`), a token
 * that was never seen here is a 503, the heartbeat answers from the person's object.
 */

const GAP_MS = 1_000;
const JITTER_MS = 250;

export class FallbackGate {
  #next = 0;

  constructor(private readonly random: () => number = Math.random) {}

  /** Whether this fallback may read D1 now (and, if so, the next one waits its second). */
  pass(now = Date.now()): boolean {
    if (now < this.#next) return false;
    this.#next = now + GAP_MS + Math.floor(this.random() * JITTER_MS);
    return true;
  }
}

/** The isolate's one gate: every path that falls back to D1 after a KV failure shares it. */
export const d1Fallback = new FallbackGate();
