import { eq } from "drizzle-orm";
import type { Db } from "../db/client";
import { people } from "../db/schema";

/** Saves a secure-app user's end-to-end encryption identifiers [seed 2.6]. */
export async function saveEncryption(db: Db, personId: number, data: { hash: string; e2e_id: string }) {
  const row = await db
    .update(people)
    .set({ encryptionHash: data.hash, e2eId: data.e2e_id })
    .where(eq(people.id, personId))
    .returning({ hash: people.encryptionHash, e2e_id: people.e2eId })
    .get();
  return row ? { hash: row.hash ?? "", e2e_id: row.e2e_id ?? "" } : null;
}
