import { personStub, type PersonStub } from "../objects/person/stub";

/**
 * What a request may ask of a person's object outside `write`: its reads, and
 * the request's own bookkeeping that the write guard waits on or that changes
 * nothing of the person's data: the token check (`checkDevice`, which adopts a
 * device at its first use), idempotency keys, the live streams (staging,
 * the upgrade, a stream ticket's one use, an account event told to the
 * sockets), and the copies the object refills from D1 or for KV (`devices`
 * adopting D1's tokens, `receiverRecords` rewriting missed keys, `keepLinks`
 * keeping in memory the index links a page read). Every other
 * method changes the person's data and is reached through `write` only.
 */
type Unguarded =
  | "feedAfter"
  | "ownAccount"
  | "lastActivityId"
  | "pendingTrustRequests"
  | "contacts"
  | "contactPage"
  | "contactListing"
  | "contactsWithPhone"
  | "deletedContacts"
  | "decisions"
  | "trustedMe"
  | "companySettings"
  | "callPolicy"
  | "indexValues"
  | "heartbeatTimes"
  | "latestBlockedCalls"
  | "unlistedBlockedCalls"
  | "counts"
  | "devices"
  | "receiverRecords"
  | "keepLinks"
  | "checkDevice"
  | "claimIdempotencyKey"
  | "settleIdempotencyKey"
  | "stageStream"
  | "fetch"
  | "redeemStreamTicket"
  | "announce";

/** A person's object as `objects.of` hands it out: calling a write through it does not compile. */
export type PersonReads = Pick<PersonStub, Unguarded>;

/**
 * The way to a person's own Durable Object (docs/architecture.md, "Where
 * data lives"): `objects.of(personId)` reads it, `objects.write(personId, …)`
 * changes it. Part of the dependency handle (`Deps.objects`), like D1 and KV;
 * nothing else builds stubs.
 */
export type PersonObjects = {
  of(personId: number): PersonReads;
  /**
   * A write to the person's object: `change` is called with its stub once
   * the request's pending token check ran (a token verified from the cache is
   * checked again before anything is written, docs/security.md "Tokens"), so
   * a revoked token writes nothing in an object either. Queue consumers and
   * cron runs have no guard: there it is the call itself.
   */
  write<R>(personId: number, change: (person: PersonStub) => R): Promise<Awaited<R>>;
};

/**
 * A write request's hooks around its object writes (services/create-deps.ts): `check` runs its pending
 * token check first; `wrote` counts a write that was not refused (a refusal, `{ ok: false }`, writes
 * nothing; a call that failed may have written).
 */
export type WriteHooks = { check: () => Promise<void>; wrote: () => void };

export const personObjectsOf = (namespace: Env["PERSON"], hooks?: WriteHooks): PersonObjects =>
  personObjectsFrom((personId) => personStub(namespace, personId), hooks);

/** `PersonObjects` over any way to a person's stub (tests pass their own). */
export const personObjectsFrom = (of: (personId: number) => PersonStub, hooks?: WriteHooks): PersonObjects => ({
  of,
  write: async <R>(personId: number, change: (person: PersonStub) => R): Promise<Awaited<R>> => {
    await hooks?.check();
    let result: Awaited<R>;
    try {
      result = await change(of(personId));
    } catch (err) {
      hooks?.wrote();
      throw err;
    }
    if ((result as { ok?: unknown } | null)?.ok !== false) hooks?.wrote();
    return result;
  },
});

/** The one translation of a refusal (lib/answer.ts): re-exported for the services that call objects. */
export { accepted, refused } from "../lib/answer";
