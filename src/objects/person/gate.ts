import type { Refusal } from "./api";
import type { Self } from "./self";

/*
 * The object's one write gate (docs/architecture.md, "The Person object"): a write to an erased object is
 * refused before it touches storage (a peer's late delivery is dropped, a chat answers `GONE`); any other
 * runs its transaction, then its effects (the streams told, keys written, deliveries sent), which see only
 * what committed. The erasure mark is set before any await (self.ts), so no write passes the gate after it.
 */

/** What a write to an erased object answers where it may refuse (a chat to its person). */
export const GONE: Refusal = { ok: false, status: 404, message: "this person's account is gone" };

export class WriteGate {
  constructor(
    private readonly ctx: DurableObjectState,
    private readonly self: Self,
  ) {}

  /** `erased` once the object was erased; else `change` in one transaction, then `effects` with its answer. */
  now<T, E = undefined>(erased: E, change: () => T, effects?: (done: T) => void): T | E {
    if (this.self.erased) return erased;
    const done = this.ctx.storage.transactionSync(change);
    effects?.(done);
    return done;
  }

  /** As `now`, awaiting the effects (a key write, a delivery) before it answers. */
  async write<T, E = undefined>(
    erased: E,
    change: () => T,
    effects?: (done: T) => Promise<unknown> | undefined,
  ): Promise<T | E> {
    if (this.self.erased) return erased;
    const done = this.ctx.storage.transactionSync(change);
    await effects?.(done);
    return done;
  }
}
