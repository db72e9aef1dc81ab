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

export const personObjectsOf = (namespace: Env["PERSON"], beforeWrite?: () => Promise<void>): PersonObjects =>
  personObjectsFrom((personId) => personStub(namespace, personId), beforeWrite);

/** `PersonObjects` over any way to a person's stub (tests pass their own). */
export const personObjectsFrom = (
  of: (personId: number) => PersonStub,
  beforeWrite?: () => Promise<void>,
): PersonObjects => ({
  of,
  write: async <R>(personId: number, change: (person: PersonStub) => R): Promise<Awaited<R>> => {
    await beforeWrite?.();
    return await change(of(personId));
  },
});

/** The one translation of a refusal (lib/answer.ts): re-exported for the services that call objects. */
export { accepted, refused } from "../lib/answer";
