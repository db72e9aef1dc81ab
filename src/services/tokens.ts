import { eq, sql } from "drizzle-orm";
import type { Db } from "../db/client";
import { accessTokens, people } from "../db/schema";
import { sha256Hex } from "../lib/crypto";
import type { Principal } from "../types";

export type TokenCheck = { ok: true; principal: Principal } | { ok: false; reason: string };

/**
 * Verified tokens are cached in the isolate for at most 30 s, so a revocation
 * takes effect within that bound (DECISIONS §2 allows up to 60 s) while a
 * busy token costs one D1 read per isolate per 30 s.
 */
const CACHE_TTL_MS = 30_000;
const CACHE_MAX = 5_000;
const cache = new Map<string, { check: TokenCheck; until: number }>();

/** Tokens are opaque base64url strings with a readable prefix; anything else is malformed. */
const TOKEN_SHAPE = /^[A-Za-z0-9_-]{8,256}$/;

export const tokenHasValidShape = (token: string) => TOKEN_SHAPE.test(token);

/**
 * Resolves a bearer token to its principal: SHA-256 lookup, then expiry and
 * revocation. `onFirstUse` lets the caller record `last_login` off the hot
 * path (it runs once per cache fill, not per request). `fresh` skips the
 * cache: writes use it, so a revoked token or a removed person can never
 * write within the cache window (reads may, for at most 30 s).
 */
export async function verifyToken(
  db: Db,
  token: string,
  now: Date,
  { onFirstUse, fresh = false }: { onFirstUse?: (work: Promise<unknown>) => void; fresh?: boolean } = {},
): Promise<TokenCheck> {
  const hash = await sha256Hex(token);
  const cached = fresh ? undefined : cache.get(hash);
  if (cached && cached.until > now.getTime()) return cached.check;

  const row = await db
    .select({
      id: accessTokens.id,
      personId: accessTokens.personId,
      serviceName: accessTokens.serviceName,
      scopes: accessTokens.scopes,
      expiresAt: accessTokens.expiresAt,
      revokedAt: accessTokens.revokedAt,
    })
    .from(accessTokens)
    .where(eq(accessTokens.tokenHash, hash))
    .get();

  const check = toCheck(row, now);
  if (check.ok && onFirstUse) onFirstUse(recordUse(db, check.principal, now));

  if (cache.size >= CACHE_MAX) cache.delete(cache.keys().next().value!);
  const until = Math.min(now.getTime() + CACHE_TTL_MS, row?.expiresAt?.getTime() ?? Infinity);
  cache.set(hash, { check, until });
  return check;
}

function toCheck(
  row:
    | {
        id: number;
        personId: number | null;
        serviceName: string | null;
        scopes: string[];
        expiresAt: Date | null;
        revokedAt: Date | null;
      }
    | undefined,
  now: Date,
): TokenCheck {
  if (!row) return { ok: false, reason: "the bearer token is not valid" };
  if (row.revokedAt) return { ok: false, reason: "the bearer token has been revoked" };
  if (row.expiresAt && row.expiresAt.getTime() <= now.getTime())
    return { ok: false, reason: "the bearer token has expired" };
  if (row.personId !== null)
    return { ok: true, principal: { kind: "person", tokenId: row.id, personId: row.personId } };
  return {
    ok: true,
    principal: { kind: "service", tokenId: row.id, service: row.serviceName ?? "service", scopes: row.scopes },
  };
}

async function recordUse(db: Db, principal: Principal, now: Date) {
  const statements = [
    db.update(accessTokens).set({ lastUsedAt: now }).where(eq(accessTokens.id, principal.tokenId)),
  ] as const;
  if (principal.kind === "person") {
    await db.batch([
      ...statements,
      // A login is not a profile change: keep `updated_at` (heartbeat's last_user_update).
      db
        .update(people)
        .set({ lastLoginAt: now, updatedAt: sql`${people.updatedAt}` })
        .where(eq(people.id, principal.personId)),
    ]);
  } else {
    await db.batch(statements);
  }
}
