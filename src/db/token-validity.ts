import { and, gt, isNull, or } from "drizzle-orm";
import { accessTokens } from "./schema";
import type { Db } from "./client";
import { inList } from "./sql";

/**
 * Which of these token ids are still valid now: not revoked, not expired, and
 * still there (a removed person's tokens go with them). The one question a
 * person's object asks about tokens (its open streams, docs/realtime.md);
 * when tokens move out of D1, only this function changes.
 */
export async function stillValidTokens(db: Db, tokenIds: number[], now: Date): Promise<Set<number>> {
  if (tokenIds.length === 0) return new Set();
  const rows = await db
    .select({ id: accessTokens.id })
    .from(accessTokens)
    .where(
      and(
        inList(accessTokens.id, tokenIds),
        isNull(accessTokens.revokedAt),
        or(isNull(accessTokens.expiresAt), gt(accessTokens.expiresAt, now)),
      ),
    )
    .all();
  return new Set(rows.map((row) => row.id));
}
