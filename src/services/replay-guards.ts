import { base64url } from "../lib/crypto";
import type { ReplayGuard } from "../objects/replay-guard/replay-guard";

/**
 * The way to the replay guards (objects/replay-guard/replay-guard.ts,
 * docs/architecture.md "The replay guard"): whether a provider's signed
 * request is used for the first time. Part of the dependency handle
 * (`Deps.replays`); nothing else builds their stubs.
 */
export type ReplayGuards = {
  /**
   * True when `signed` (the exact bytes the provider signed) was not seen
   * before for this token; it is then remembered until `expiresAt` (ms).
   * One round trip to one object; throws when the object cannot be reached.
   */
  firstUse(tokenId: number, signed: Uint8Array, expiresAt: number): Promise<boolean>;
};

/**
 * A token's signed requests are spread over this many objects by their
 * digest: one object takes about 1,000 calls a second, so a token can carry
 * 16,000 signed lookups a second (docs/performance.md, "The replay guard").
 * A request always lands on the same shard, so the check stays exact.
 */
export const REPLAY_SHARDS = 16;

/** Bytes of the SHA-256 kept per request: 128 bits, no collision in any window's traffic. */
const DIGEST_BYTES = 16;

export const replayGuardsOf = (namespace: DurableObjectNamespace<ReplayGuard>): ReplayGuards => ({
  async firstUse(tokenId, signed, expiresAt) {
    const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", signed));
    const shard = digest[0]! % REPLAY_SHARDS;
    const guard = namespace.get(namespace.idFromName(`replay:${tokenId}:${shard}`));
    return await guard.firstUse(base64url(digest.slice(0, DIGEST_BYTES)), expiresAt);
  },
});
