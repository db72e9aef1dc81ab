import { and, eq, isNotNull, isNull, sql } from "drizzle-orm";
import { createDb, type Db } from "../db/client";
import { accessTokens, people } from "../db/schema";
import { writeGuardOf, type WriteCondition } from "../db/write-guard";
import { base64url, sha256Hex } from "../lib/crypto";
import { unauthorized } from "../lib/errors";
import type { ProviderSigning } from "../domain/provider-signing";
import type { Principal } from "../types";
import { WriteBatch, type Deps } from "./outbox";

export type TokenCheck = { ok: true; principal: Principal } | { ok: false; reason: string };

/**
 * Verified tokens are cached in two layers (docs/security.md, "Tokens"): in
 * the isolate for at most 30 s, and in KV (`tok:<sha256>`) for at most 30 s
 * of validity, so a revocation takes effect within 60 s while a busy token
 * costs no D1 read at all on the ringing path. Only valid tokens are cached:
 * unknown ones cannot evict them, and are limited per IP before they reach D1
 * (`verifyToken`'s `beforeDatabase`). A write served from the cache is checked
 * again inside its own first D1 write (`write`), so a revoked token never
 * changes data.
 */
const CACHE_TTL_MS = 30_000;
const CACHE_MAX = 5_000;
const cache = new Map<string, { principal: Principal; until: number }>();
const kvKey = (hash: string) => `tok:${hash}`;

/** Tokens are opaque base64url strings with a readable prefix; anything else is malformed. */
const TOKEN_SHAPE = /^[A-Za-z0-9_-]{8,256}$/;

export const tokenHasValidShape = (token: string) => TOKEN_SHAPE.test(token);

/** `last_used` and `last_login` are written at most once an hour per token (`recordUse`). */
const USE_RECORDED_EVERY_MS = 3_600_000;

export type VerifyOptions = {
  /** Runs the bookkeeping off the hot path: `last_used`/`last_login`, at most hourly, and the KV fill. */
  onFirstUse?: (work: Promise<unknown>) => void;
  /** Skip both caches and read D1 now. */
  fresh?: boolean;
  /**
   * The request may write: a verification served from a cache arms the
   * database's write guard (db/write-guard.ts) with the token's check, so the
   * request's first D1 write fails, and it answers 401, if the token was
   * revoked or its person removed meanwhile, without a round trip of its own.
   * On a database without a guard it reads D1 now, like `fresh`.
   */
  write?: boolean;
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
  { onFirstUse, fresh = false, write = false, kv, beforeDatabase }: VerifyOptions = {},
): Promise<TokenCheck> {
  const hash = await sha256Hex(token);
  const cached = cache.get(hash);
  const guard = write ? writeGuardOf(db.$client) : undefined;
  if (!fresh && (!write || guard)) {
    let principal: Principal | null = null;
    if (cached && cached.until > now.getTime()) principal = cached.principal;
    else {
      const shared = kv ? await readShared(kv, hash, now) : null;
      if (shared) {
        remember(hash, shared.principal, Math.min(shared.until, now.getTime() + CACHE_TTL_MS));
        principal = shared.principal;
      }
    }
    if (principal) {
      guard?.arm(tokenGuard(principal.tokenId, hash, now, kv));
      return { ok: true, principal };
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
      lastUsedAt: accessTokens.lastUsedAt,
      signing: accessTokens.signing,
    })
    .from(accessTokens)
    .where(eq(accessTokens.tokenHash, hash))
    .get();

  const check = toCheck(row, now);
  if (!check.ok) return check;
  if (onFirstUse && useIsDue(row!.lastUsedAt, now)) onFirstUse(recordUse(db, check.principal, now));
  const until = Math.min(now.getTime() + CACHE_TTL_MS, row?.expiresAt?.getTime() ?? Infinity);
  remember(hash, check.principal, until);
  if (kv && !fresh) onFirstUse?.(writeShared(kv, hash, check.principal, until));
  return check;
}

function remember(hash: string, principal: Principal, until: number) {
  if (cache.size >= CACHE_MAX) cache.delete(cache.keys().next().value!);
  cache.set(hash, { principal, until });
}

/**
 * The write guard of a token verified from a cache: the write's first D1
 * round trip starts with `TOKEN_STILL_VALID`, which fails (SQLite's `json()`
 * of a text that is not JSON) unless the token still exists (a removed
 * person's tokens go with them), is not revoked and has not expired. When
 * that is what failed, the token is forgotten by both caches and the request
 * answers 401 with the reason.
 */
const TOKEN_STILL_VALID = `select json(case when exists (select 1 from access_tokens where id = ? and revoked_at is null
  and (expires_at is null or expires_at > ?)) then '1' else 'the token is no longer valid' end) as token_valid`;

function tokenGuard(tokenId: number, hash: string, now: Date, kv: KVNamespace | undefined): WriteCondition {
  return {
    statement: (database) => database.prepare(TOKEN_STILL_VALID).bind(tokenId, now.getTime()),
    refusal: async (database) => {
      const row = await createDb(database as D1Database)
        .select({
          id: accessTokens.id,
          personId: accessTokens.personId,
          serviceName: accessTokens.serviceName,
          scopes: accessTokens.scopes,
          expiresAt: accessTokens.expiresAt,
          revokedAt: accessTokens.revokedAt,
        })
        .from(accessTokens)
        .where(eq(accessTokens.id, tokenId))
        .get();
      const check = toCheck(row, now);
      if (check.ok) return null;
      cache.delete(hash);
      await kv?.delete(kvKey(hash)).catch(() => undefined);
      return unauthorized(check.reason);
    },
  };
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
        signing?: ProviderSigning | null;
      }
    | undefined,
  now: Date,
): TokenCheck {
  if (!row)
    return {
      ok: false,
      reason: "the bearer token is unknown: this API never issued it, or it was deleted, so it is not valid",
    };
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
  // A provider token's signing configuration travels with its principal (and its cached verification).
  const principal: Principal = {
    kind: "service",
    tokenId: row.id,
    service: row.serviceName ?? "service",
    scopes: row.scopes,
  };
  return { ok: true, principal: row.signing ? { ...principal, signing: row.signing } : principal };
}

/**
 * Forgets a token's cached verification in this isolate and in KV: the next
 * request reads D1 again (its signing configuration changed). Other
 * isolates follow within 30 s.
 */
export async function forgetVerifiedToken(kv: KVNamespace, tokenHash: string): Promise<void> {
  cache.delete(tokenHash);
  await kv.delete(kvKey(tokenHash)).catch(() => undefined);
}

const useIsDue = (lastUsedAt: Date | null, now: Date) =>
  lastUsedAt === null || lastUsedAt.getTime() <= now.getTime() - USE_RECORDED_EVERY_MS;

/**
 * `last_used` of the token and `last_login` of its person, when the token's
 * was written an hour ago or more (docs/decisions.md, "Auth"): one round trip
 * an hour per token, not one per request. Conditional, so isolates that read
 * the old time together change the rows once.
 */
async function recordUse(db: Db, principal: Principal, now: Date) {
  const hourAgo = now.getTime() - USE_RECORDED_EVERY_MS;
  const statements = [
    db
      .update(accessTokens)
      .set({ lastUsedAt: now })
      .where(
        and(
          eq(accessTokens.id, principal.tokenId),
          sql`(${accessTokens.lastUsedAt} is null or ${accessTokens.lastUsedAt} <= ${hourAgo})`,
        ),
      ),
  ] as const;
  if (principal.kind === "person") {
    await db.batch([
      ...statements,
      // A login is not a profile change: keep `updated_at` (heartbeat's last_user_update).
      db
        .update(people)
        .set({ lastLoginAt: now, updatedAt: sql`${people.updatedAt}` })
        .where(
          and(
            eq(people.id, principal.personId),
            sql`(${people.lastLoginAt} is null or ${people.lastLoginAt} <= ${hourAgo})`,
          ),
        ),
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
export async function mintContainerToken(deps: Deps, personId: number, now: Date): Promise<string> {
  const bytes = crypto.getRandomValues(new Uint8Array(32));
  const token = `vcc_${base64url(bytes)}`;
  const batch = new WriteBatch(deps, now);
  batch.add(
    deps.db.insert(accessTokens).values({
      tokenHash: await sha256Hex(token),
      prefix: token.slice(0, 8),
      personId,
      scopes: [CONTAINER_SCOPE],
      expiresAt: new Date(now.getTime() + CONTAINER_TOKEN_DAYS * 86_400_000),
      createdAt: now,
    }),
  );
  await batch.commit();
  return token;
}

/**
 * Revokes `token` if it is a container-scoped token (a full person token in
 * the cookie is left alone: signing out of the container must not end the
 * person's other sessions). Forgets it in this isolate's cache and in the
 * shared KV cache at once; other isolates forget it within 30 s.
 */
export async function revokeContainerToken(deps: Deps, token: string, now: Date): Promise<void> {
  const hash = await sha256Hex(token);
  const batch = new WriteBatch(deps, now);
  batch.add(
    deps.db
      .update(accessTokens)
      .set({ revokedAt: now })
      .where(
        and(
          eq(accessTokens.tokenHash, hash),
          isNotNull(accessTokens.personId),
          sql`exists (select 1 from json_each(${accessTokens.scopes}) where value = ${CONTAINER_SCOPE})`,
          isNull(accessTokens.revokedAt),
        ),
      ),
  );
  await batch.commit();
  const { kv } = deps;
  // After the write, so no verification in between can cache it as valid again.
  cache.delete(hash);
  await kv.delete(kvKey(hash)).catch(() => undefined);
}
