import { and, eq, isNotNull, isNull, sql } from "drizzle-orm";
import type { Db } from "../db/client";
import { accessTokens, people } from "../db/schema";
import { sha256Hex } from "../lib/crypto";
import type { Principal } from "../types";

export type TokenCheck = { ok: true; principal: Principal } | { ok: false; reason: string };

/**
 * Verified tokens are cached in two layers (docs/security.md, "Tokens"): in
 * the isolate for at most 30 s, and in KV (`tok:<sha256>`) for at most 30 s
 * of validity, so a revocation takes effect within 60 s while a busy token
 * costs no D1 read at all on the ringing path. Only valid tokens are cached:
 * unknown ones cannot evict them, and are limited per IP before they reach D1
 * (`verifyToken`'s `beforeDatabase`).
 */
const CACHE_TTL_MS = 30_000;
const CACHE_MAX = 5_000;
const cache = new Map<string, { principal: Principal; until: number }>();
const kvKey = (hash: string) => `tok:${hash}`;

/** Tokens are opaque base64url strings with a readable prefix; anything else is malformed. */
const TOKEN_SHAPE = /^[A-Za-z0-9_-]{8,256}$/;

export const tokenHasValidShape = (token: string) => TOKEN_SHAPE.test(token);

export type VerifyOptions = {
  /** Records `last_login` off the hot path (once per D1 read, not per request). */
  onFirstUse?: (work: Promise<unknown>) => void;
  /** Skip both caches: writes see the token's current state (revocation, a removed person). */
  fresh?: boolean;
  /** The KV namespace of the second cache layer. */
  kv?: KVNamespace;
  /** Runs before the D1 read; a thrown error (429) stops it. */
  beforeDatabase?: () => Promise<void>;
};

/**
 * Resolves a bearer token to its principal: SHA-256 lookup, then expiry and
 * revocation, through the caches unless `fresh`.
 */
export async function verifyToken(
  db: Db,
  token: string,
  now: Date,
  { onFirstUse, fresh = false, kv, beforeDatabase }: VerifyOptions = {},
): Promise<TokenCheck> {
  const hash = await sha256Hex(token);
  const cached = cache.get(hash);
  if (!fresh) {
    if (cached && cached.until > now.getTime()) return { ok: true, principal: cached.principal };
    const shared = kv ? await readShared(kv, hash, now) : null;
    if (shared) {
      remember(hash, shared.principal, Math.min(shared.until, now.getTime() + CACHE_TTL_MS));
      return { ok: true, principal: shared.principal };
    }
  }
  // A token this isolate never saw valid pays the IP budget first (a write re-reads known ones freely).
  if (!cached) await beforeDatabase?.();

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
  if (!check.ok) return check;
  if (onFirstUse) onFirstUse(recordUse(db, check.principal, now));
  const until = Math.min(now.getTime() + CACHE_TTL_MS, row?.expiresAt?.getTime() ?? Infinity);
  remember(hash, check.principal, until);
  if (kv && !fresh) onFirstUse?.(writeShared(kv, hash, check.principal, until));
  return check;
}

function remember(hash: string, principal: Principal, until: number) {
  if (cache.size >= CACHE_MAX) cache.delete(cache.keys().next().value!);
  cache.set(hash, { principal, until });
}

async function readShared(kv: KVNamespace, hash: string, now: Date) {
  try {
    const entry = await kv.get<{ principal: Principal; until: number }>(kvKey(hash), "json");
    return entry && entry.until > now.getTime() ? entry : null;
  } catch {
    return null; // the D1 read decides
  }
}

/** KV's minimum TTL is 60 s; `until` inside the value is what bounds its use to 30 s. */
async function writeShared(kv: KVNamespace, hash: string, principal: Principal, until: number) {
  await kv.put(kvKey(hash), JSON.stringify({ principal, until }), { expirationTtl: 60 });
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
    return {
      ok: true,
      principal: row.scopes.includes(CONTAINER_SCOPE)
        ? { kind: "person", tokenId: row.id, personId: row.personId, scope: CONTAINER_SCOPE }
        : { kind: "person", tokenId: row.id, personId: row.personId },
    };
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

/**
 * Container-scoped person tokens (docs/consent.md): the consent container's
 * `session` cookie holds one, so a stolen cookie cannot call the rest of the
 * API. Stored like any person token, with `scopes: ["vcc"]`.
 */
export const CONTAINER_SCOPE = "vcc";
const CONTAINER_PATHS = "/apps/vcc/";
const CONTAINER_TOKEN_DAYS = 30;

/** Whether `principal` may act on `path`: a container-scoped token only under /apps/vcc/. */
export function principalAllowedOn(principal: Principal, path: string): boolean {
  return principal.kind !== "person" || principal.scope !== CONTAINER_SCOPE || path.startsWith(CONTAINER_PATHS);
}

/** Mints a container-scoped token for `personId`; the token is returned once, only its hash is stored. */
export async function mintContainerToken(db: Db, personId: number, now: Date): Promise<string> {
  const bytes = crypto.getRandomValues(new Uint8Array(32));
  const token = `vcc_${btoa(String.fromCharCode(...bytes))
    .replace(/\+/g, "-")
    .replace(/\//g, "_")
    .replace(/=+$/, "")}`;
  await db.insert(accessTokens).values({
    tokenHash: await sha256Hex(token),
    prefix: token.slice(0, 8),
    personId,
    scopes: [CONTAINER_SCOPE],
    expiresAt: new Date(now.getTime() + CONTAINER_TOKEN_DAYS * 86_400_000),
    createdAt: now,
  });
  return token;
}

/**
 * Revokes `token` if it is a container-scoped token (a full person token in
 * the cookie is left alone: signing out of the container must not end the
 * person's other sessions). Forgets it in this isolate's cache and in the
 * shared KV cache at once; other isolates forget it within 30 s.
 */
export async function revokeContainerToken(db: Db, token: string, now: Date, kv?: KVNamespace): Promise<void> {
  const hash = await sha256Hex(token);
  await db
    .update(accessTokens)
    .set({ revokedAt: now })
    .where(
      and(
        eq(accessTokens.tokenHash, hash),
        isNotNull(accessTokens.personId),
        sql`exists (select 1 from json_each(${accessTokens.scopes}) where value = ${CONTAINER_SCOPE})`,
        isNull(accessTokens.revokedAt),
      ),
    );
  // After the write, so no verification in between can cache it as valid again.
  cache.delete(hash);
  await kv?.delete(kvKey(hash)).catch(() => undefined);
}
