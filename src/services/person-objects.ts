import { asc, lte } from "drizzle-orm";
import { personErasures } from "../db/schema";
import { inList } from "../db/sql";
import { logError } from "../lib/log";
import { personStub } from "../objects/person/stub";
import type { Person } from "../objects/person/person";
import type { Deps } from "./deps";

/**
 * The way to a person's own Durable Object (docs/architecture.md, "Where
 * data lives"): `objects.of(personId)` is an RPC stub of that person's
 * `Person` object. Part of the dependency handle (`Deps.objects`), like D1
 * and KV; nothing else builds stubs.
 */
export type PersonObjects = {
  of(personId: number): DurableObjectStub<Person>;
  /**
   * A write to the person's object: `change` is called with its stub once
   * the request's pending token check ran (a token verified from the cache is
   * checked again before anything is written, docs/security.md "Tokens"), so
   * a revoked token writes nothing in an object either.
   */
  write<R>(personId: number, change: (person: DurableObjectStub<Person>) => R): Promise<Awaited<R>>;
};

export const personObjectsOf = (
  namespace: DurableObjectNamespace<Person>,
  beforeWrite?: () => Promise<void>,
): PersonObjects => personObjectsFrom((personId) => personStub(namespace, personId), beforeWrite);

/** `PersonObjects` over any way to a person's stub (tests pass their own). */
export const personObjectsFrom = (
  of: (personId: number) => DurableObjectStub<Person>,
  beforeWrite?: () => Promise<void>,
): PersonObjects => ({
  of,
  write: async <R>(personId: number, change: (person: DurableObjectStub<Person>) => R): Promise<Awaited<R>> => {
    await beforeWrite?.();
    return await change(of(personId));
  },
});

/** The one translation of a refusal (lib/answer.ts): re-exported for the services that call objects. */
export { accepted, refused } from "../lib/answer";

/** Objects erased per `erase-persons` chunk (each one RPC and one row delete). */
export const ERASE_CHUNK = 50;
/** An object that did not answer is tried again this much later, so it never holds the others up. */
export const ERASE_RETRY_MS = 10 * 60_000;

/**
 * Erases the objects of people whose account is gone (`person_erasures`):
 * the given ones right after the commit that deleted them, or the oldest
 * due ones (the `erase-persons` sweep). A row goes once its object answered;
 * a failure is logged and the row is due again `ERASE_RETRY_MS` later. The
 * sweep continues only while a full chunk erased something: objects that
 * keep failing wait for their next turn, they do not keep a chain going.
 * Never throws.
 */
export async function eraseGonePersons(
  deps: Deps,
  personIds?: number[],
  now = new Date(),
): Promise<{ erased: number; more: boolean }> {
  const due =
    personIds ??
    (
      await deps.db
        .select({ personId: personErasures.personId })
        .from(personErasures)
        .where(lte(personErasures.dueAt, now))
        .orderBy(asc(personErasures.dueAt))
        .limit(ERASE_CHUNK)
        .all()
    ).map((row) => row.personId);
  const done: number[] = [];
  const failed: number[] = [];
  await Promise.all(
    due.map(async (personId) => {
      try {
        await deps.objects.of(personId).erase();
        done.push(personId);
      } catch (err) {
        failed.push(personId);
        logError("erasing a person's object failed; the sweep retries", err, { personId });
      }
    }),
  );
  try {
    await deps.db.batch([
      deps.db.delete(personErasures).where(inList(personErasures.personId, done)),
      deps.db
        .update(personErasures)
        .set({ dueAt: new Date(now.getTime() + ERASE_RETRY_MS) })
        .where(inList(personErasures.personId, failed)),
    ]);
  } catch (err) {
    logError("recording erased objects failed; they are erased again later", err, { people: done.length });
  }
  return { erased: done.length, more: personIds === undefined && due.length >= ERASE_CHUNK && done.length > 0 };
}
