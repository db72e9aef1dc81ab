import type { Delivery } from "./records";
import { DELIVERY_TIMEOUT_MS } from "./sending";

/** How a consumer run shares its connections among endpoints (docs/webhooks.md, "Timeouts and fairness"). */

/** …when an earlier attempt to the same endpoint failed in the same consumer run (`Lanes`). */
export const FAILING_TIMEOUT_MS = 3_000;
/**
 * POSTs in flight at once in one consumer run. A Worker invocation keeps at
 * most six connections open and queues the rest, where their timeouts would
 * run down unseen; five leave one for the queue's and D1's own traffic.
 */
export const CONCURRENT_POSTS = 5;

/**
 * The attempts of one consumer run (docs/webhooks.md, "Timeouts and
 * fairness"): at most `CONCURRENT_POSTS` at once, at most one at a time per
 * endpoint (the next one reads its row after the previous one recorded its
 * outcome, so a 410 or a deactivation is seen), and an endpoint that failed
 * earlier in the run gets `FAILING_TIMEOUT_MS` instead of
 * `DELIVERY_TIMEOUT_MS`. Waiting attempts start in the order they asked,
 * skipping those whose endpoint is busy, so a slow or hanging endpoint holds
 * one lane and delays no other endpoint's attempt by more than one timeout.
 */
export class Lanes {
  #free = CONCURRENT_POSTS;
  readonly #busy = new Set<string>();
  readonly #failed = new Set<string>();
  readonly #waiting: { endpoint: string; start: () => void }[] = [];

  /** Runs `attempt` in a lane for `endpoint`, with the timeout its POST gets; `ok` says whether it succeeded. */
  async run<T>(endpoint: string, attempt: (timeoutMs: number) => Promise<T>, ok: (result: T) => boolean): Promise<T> {
    await new Promise<void>((start) => {
      this.#waiting.push({ endpoint, start });
      this.#next();
    });
    try {
      const result = await attempt(this.#failed.has(endpoint) ? FAILING_TIMEOUT_MS : DELIVERY_TIMEOUT_MS);
      if (!ok(result)) this.#failed.add(endpoint);
      return result;
    } catch (err) {
      this.#failed.add(endpoint);
      throw err;
    } finally {
      this.#busy.delete(endpoint);
      this.#free++;
      this.#next();
    }
  }

  #next() {
    while (this.#free > 0) {
      const index = this.#waiting.findIndex((waiting) => !this.#busy.has(waiting.endpoint));
      if (index === -1) return;
      const [waiting] = this.#waiting.splice(index, 1);
      this.#busy.add(waiting!.endpoint);
      this.#free--;
      waiting!.start();
    }
  }
}

/**
 * The order a consumer run attempts its messages in: endpoints that are not
 * failing first (a webhook whose last attempt failed goes after them), and
 * within each, one message per endpoint in turn.
 */
export function fairOrder<M>(messages: M[], rowOf: (message: M) => Delivery | undefined): M[] {
  const turn = new Map<string, number>();
  const keyed = messages.map((message, index) => {
    const webhook = rowOf(message)?.webhook;
    const endpoint = webhook?.endpoint ?? "";
    const round = turn.get(endpoint) ?? 0;
    turn.set(endpoint, round + 1);
    return { message, index, failing: webhook?.failingSince ? 1 : 0, round };
  });
  keyed.sort((a, b) => a.failing - b.failing || a.round - b.round || a.index - b.index);
  return keyed.map((entry) => entry.message);
}
