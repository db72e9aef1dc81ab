import { eq } from "drizzle-orm";
import { people } from "../db/schema";
import { personGone, type Answer } from "../lib/answer";
import { WriteBatch } from "./outbox";
import type { Deps } from "./deps";

/**
 * Saves a secure-app user's end-to-end encryption identifiers
 * (docs/decisions.md, "Encryption identifiers"); a 401 refusal when the person is gone.
 */
export async function saveEncryption(
  deps: Deps,
  personId: number,
  data: { hash: string; e2e_id: string },
): Promise<Answer<{ saved: { hash: string; e2e_id: string } }>> {
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
