import { eq } from "drizzle-orm";
import { people } from "../db/schema";
import { personGone, type Answer } from "../lib/answer";
import { WriteBatch } from "./outbox";
import type { Deps } from "./deps";

/**
 * Saves a secure-app user's end-to-end encryption identifiers
 * (docs/decisions.md, "Encryption identifiers"); a 401 refusal when the person is gone. Saving
 * the identifiers the person has already (an app that saves them at each start) is one read and
 * writes nothing: the record's `updated_at`, which coworkers' heartbeats follow, stays.
 */
export async function saveEncryption(
  deps: Deps,
  personId: number,
  data: { hash: string; e2e_id: string },
): Promise<Answer<{ saved: { hash: string; e2e_id: string } }>> {
  const current = await deps.db
    .select({ hash: people.encryptionHash, e2e_id: people.e2eId })
    .from(people)
    .where(eq(people.id, personId))
    .get();
  if (!current) return personGone();
  if (current.hash === data.hash && current.e2e_id === data.e2e_id) return { ok: true, saved: data };
  const batch = new WriteBatch(deps);
  const update = batch.add(
    deps.db
      .update(people)
      .set({ encryptionHash: data.hash, e2eId: data.e2e_id })
      .where(eq(people.id, personId))
      .returning({ hash: people.encryptionHash, e2e_id: people.e2eId }),
  );
  // The record's `updated_at` moves (drizzle's update hook): the person's heartbeat follows.
  batch.markStalePersonIfNumbered(personId);
  // Whether contacts show them reachable end to end (their link's card).
  batch.markStaleLinkCard(personId);
  const [row] = (await batch.commit()).results[update] as { hash: string | null; e2e_id: string | null }[];
  return row ? { ok: true, saved: { hash: row.hash ?? "", e2e_id: row.e2e_id ?? "" } } : personGone();
}
