import { asc, lte } from "drizzle-orm";
import { personErasures } from "../db/schema";
import { inList } from "../db/sql";
import { logError } from "../lib/log";
import type { Deps } from "./deps";

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
        await deps.objects.write(personId, (person) => person.erase());
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
