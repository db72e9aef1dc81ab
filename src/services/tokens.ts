import { and, eq, isNotNull, isNull, sql } from "drizzle-orm";
import { createDb, type Db } from "../db/client";
import { accessTokens } from "../db/schema";
import type { WriteCondition } from "../db/write-guard";
import { base64url, sha256Hex } from "../lib/crypto";
import { ApiError, unauthorized } from "../lib/errors";
import { d1Fallback } from "../lib/fallback-gate";
import type { Principal } from "../types";
import { WriteBatch } from "./outbox";
import type { Deps } from "./deps";
import { putReservedToken, reserveTokenRecord, settleTokenRecords } from "./index-apply";
import {
  checkOfRecord,
  CONTAINER_SCOPE,
  recordOf,
  TOKEN_COLUMNS,
  toCheck,
  type TokenCheck,
  tokenKey,
  type TokenRecord,
} from "./token-records";

export type { TokenCheck } from "./token-records";

/**
 * A verified token's record lives in KV (`tok:<sha256>`, docs/architecture.md,
 * "Tokens"), written with no TTL: once a token has been
 * verified, no request reads D1 for it again, however long ago that was.
 * Every command that invalidates a token (its revocation, its person's
 * removal) overwrites the record as refused, and KV's reads are cached at
 * the edge for at most 30 s (`cacheTtl`), as is this isolate's copy, so a
 * revocation takes effect everywhere within 60 s. Unknown tokens are never
 * recorded and are limited per IP before they reach D1 (`verifyToken`'s
 * `beforeDatabase`). A write served from a record is checked again inside its
 * own first D1 write (`write`), so a revoked token never changes data.
 */
const CACHE_TTL_MS = 30_000;
/** The edge cache of a KV read: KV's minimum. */
const KV_CACHE_TTL_SECONDS = 30;
const CACHE_MAX = 5_000;
type Cached = { principal: Principal; until: number; expiresAt: number | null; usedAt: number | null };
const cache = new Map<string, Cached>();

/** Tokens are opaque base64url strings with a readable prefix; anything else is malformed. */
const TOKEN_SHAPE = /^[A-Za-z0-9_-]{8,256}$/;

export const tokenHasValidShape = (token: string) => TOKEN_SHAPE.test(token);

/** `last_used` and `last_login` are written at most once a day per token (`recordUse`). */
const USE_RECORDED_EVERY_MS = 86_400_000;

export type VerifyOptions = {
  /** Runs the bookkeeping off the hot path: `last_used`/`last_login`, at most daily, and the record's fill. */
  onFirstUse?: (work: Promise<unknown>) => void;
  /** Skip the isolate's cache and KV and read D1 now. */
  fresh?: boolean;
  /**
   * The request may write: a verification served from a cache arms the
   * request's write guard (`deps.guard`, db/write-guard.ts) with the token's check, so the
   * request's first D1 write fails, and it answers 401, if the token was
   * revoked or its person removed meanwhile, without a round trip of its own.
   * Without a guard it reads D1 now, like `fresh`.
   */
  write?: boolean;
  /** Where the verification records live. */
  kv?: KVNamespace;
  /** Runs before the D1 read; a thrown error (429) stops it. */
  beforeDatabase?: () => Promise<void>;
};

/**
 * Resolves a bearer token to its principal: the isolate's cache, then the
 * token's record in KV, and only for a token without one, D1 (SHA-256
 * lookup, then expiry and revocation), whose answer is then recorded.
 */
export async function verifyToken(
  { db, guard: writeGuard }: Pick<Deps, "db" | "guard">,
  token: string,
  now: Date,
  { onFirstUse, fresh = false, write = false, kv, beforeDatabase }: VerifyOptions = {},
): Promise<TokenCheck> {
  const hash = await sha256Hex(token);
  const cached = cache.get(hash);
  const guard = write ? writeGuard : undefined;
  // Bookkeeping and fills are not the request's write: they never ride its guard.
  const plain = writeGuard ? createDb(writeGuard.inner as D1Database) : db;
  if (!fresh && (!write || guard)) {
    let entry = cached && cached.until > now.getTime() ? cached : null;
    if (!entry && kv) {
      const record = await readRecord(kv, hash);
      // KV failed: one D1 read a second per isolate (lib/fallback-gate.ts); the others wait a second.
      if (record === KV_FAILED && !d1Fallback.pass()) throw indexUnavailable();
      const check = checkOfRecord(record === KV_FAILED ? null : record, now);
      if (check && !check.ok) return check;
      if (check?.ok && record && record !== KV_FAILED && "principal" in record) {
        entry = remember(hash, check.principal, record.expiresAt, record.usedAt, now);
      }
    }
    if (entry) {
      guard?.arm(tokenGuard(entry.principal.tokenId, hash, now, kv));
      if (kv && onFirstUse && useIsDue(entry.usedAt, now)) {
        entry.usedAt = now.getTime(); // this isolate records it once
        const record = { usedAt: entry.usedAt };
        onFirstUse(Promise.all([recordUse(plain, entry.principal, now), fill(plain, kv, hash, now, record.usedAt)]));
      }
      return { ok: true, principal: entry.principal };
    }
  }
  // A token this isolate never saw valid pays the IP budget first (a write re-reads known ones freely).
  if (!cached) await beforeDatabase?.();

  // A token D1 holds gets its record, refused or not (unknown ones do not: they would fill KV). The read
  // that records it takes the key's write slot in the same statement (index-apply.ts `reserveTokenRecord`).
  const recording = kv !== undefined && !fresh;
  const { row, reserved } = recording
    ? await reserveTokenRecord(plain, hash, now)
    : {
        row: await db.select(TOKEN_COLUMNS).from(accessTokens).where(eq(accessTokens.tokenHash, hash)).get(),
        reserved: false,
      };

  const check = toCheck(row, now);
  const bookkeeping = check.ok && onFirstUse !== undefined && useIsDue(row!.lastUsedAt?.getTime() ?? null, now);
  if (row && recording) {
    const record = recordOf({ ...row, lastUsedAt: bookkeeping ? now : row.lastUsedAt }, now);
    const put = reserved
      ? putReservedToken(kv, hash, record)
      : "refused" in record
        ? settleTokenRecords({ db: plain, kv }, [hash], now)
        : Promise.resolve();
    if (onFirstUse) onFirstUse(put);
    else put.catch(() => undefined); // as before: nobody waits for the record
  }
  if (!check.ok) return check;
  const usedAt = bookkeeping ? now.getTime() : (row!.lastUsedAt?.getTime() ?? null);
  remember(hash, check.principal, row!.expiresAt?.getTime() ?? null, usedAt, now);
  if (bookkeeping) onFirstUse?.(recordUse(plain, check.principal, now));
  return check;
}

/**
 * Forgets a token's verification in this isolate and rewrites its record in KV from D1 through the
 * index work (its signing configuration changed): other isolates follow within 30 s.
 */
export async function forgetVerifiedToken(deps: Pick<Deps, "db" | "kv">, tokenHash: string, now = new Date()) {
  cache.delete(tokenHash);
  await settleTokenRecords(deps, [tokenHash], now);
}

/** Forgets a token's verification in this isolate only (its KV record is rewritten by the revoking command). */
export function forgetInIsolate(tokenHash: string): void {
  cache.delete(tokenHash);
}

function remember(hash: string, principal: Principal, expiresAt: number | null, usedAt: number | null, now: Date) {
  if (cache.size >= CACHE_MAX) cache.delete(cache.keys().next().value!);
  const until = Math.min(now.getTime() + CACHE_TTL_MS, expiresAt ?? Infinity);
  const entry: Cached = { principal, until, expiresAt, usedAt };
  cache.set(hash, entry);
  return entry;
}

/**
 * The record rewritten with the day's use (`usedAt`): the token is read again with the key's write
 * slot taken (index-apply.ts `reserveTokenRecord`, one D1 statement, once per token and day), and
 * its record put through the one writer of keys. A key written less than a second ago keeps what it
 * holds (a refused token's record then goes through the index work). Failures are left to the next
 * verification.
 */
async function fill(db: Db, kv: KVNamespace, hash: string, now: Date, usedAt: number | null) {
  const { row, reserved } = await reserveTokenRecord(db, hash, now);
  if (!row) return;
  const record = recordOf({ ...row, lastUsedAt: usedAt === null ? row.lastUsedAt : new Date(usedAt) }, now);
  if (reserved) await putReservedToken(kv, hash, record);
  else if ("refused" in record) await settleTokenRecords({ db, kv }, [hash], now);
}

/**
 * The write guard of a token verified from a cache: the write's first D1
 * round trip starts with `TOKEN_STILL_VALID`, which fails (SQLite's `json()`
 * of a text that is not JSON) unless the token still exists (a removed
 * person's tokens go with them), is not revoked and has not expired. When
 * that is what failed, the isolate forgets the token, its record in KV is
 * overwritten as refused (invalid is final, so a direct put is safe), and the
 * request answers 401 with the reason.
 */
const TOKEN_STILL_VALID = `select json(case when exists (select 1 from access_tokens where id = ? and revoked_at is null
  and (expires_at is null or expires_at > ?)) then '1' else 'the token is no longer valid' end) as token_valid`;

function tokenGuard(tokenId: number, hash: string, now: Date, kv: KVNamespace | undefined): WriteCondition {
  return {
    statement: (database) => database.prepare(TOKEN_STILL_VALID).bind(tokenId, now.getTime()),
    refusal: async (database) => {
      const db = createDb(database as D1Database);
      const row = await db.select(TOKEN_COLUMNS).from(accessTokens).where(eq(accessTokens.id, tokenId)).get();
      const check = toCheck(row, now);
      if (check.ok) return null;
      cache.delete(hash);
      // Invalid is final: the refused record goes through the index work (recorded, applied now).
      if (kv) await settleTokenRecords({ db, kv }, [hash], now).catch(() => undefined);
      return unauthorized(check.reason);
    },
  };
}

const KV_FAILED = "kv failed";

async function readRecord(kv: KVNamespace, hash: string): Promise<TokenRecord | null | typeof KV_FAILED> {
  try {
    return await kv.get<TokenRecord>(tokenKey(hash), { type: "json", cacheTtl: KV_CACHE_TTL_SECONDS });
  } catch {
    return KV_FAILED; // the D1 read decides, when the gate lets it
  }
}

const indexUnavailable = () =>
  new ApiError(503, "tokens cannot be checked right now (their index is unavailable); retry in a second", {
    "Retry-After": "1",
  });

const useIsDue = (lastUsedAt: number | null, now: Date) =>
  lastUsedAt === null || lastUsedAt <= now.getTime() - USE_RECORDED_EVERY_MS;

/**
 * `last_used` of the token and `last_login` of its person, when the token's
 * was written a day ago or more (docs/decisions.md, "Auth"): one D1 statement
 * a day per token, not one per request. Conditional, so isolates that read
 * the old time together change the rows once.
 */
async function recordUse(db: Db, principal: Principal, now: Date) {
  const dayAgo = now.getTime() - USE_RECORDED_EVERY_MS;
  // One statement: a person's `last_login_at` follows in the same statement (trigger
  // `token_use_is_a_login`, drizzle/0027), without touching their `updated_at`.
  await db
    .update(accessTokens)
    .set({ lastUsedAt: now })
    .where(
      and(
        eq(accessTokens.id, principal.tokenId),
        sql`(${accessTokens.lastUsedAt} is null or ${accessTokens.lastUsedAt} <= ${dayAgo})`,
      ),
    );
}

export { CONTAINER_SCOPE };
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
 * person's other sessions). This isolate forgets it at once; its record in KV
 * is rewritten as refused by the command's index work (other isolates within
 * 60 s).
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
  batch.reindexTokens([hash]);
  await batch.commit();
  // After the write, so no verification in between can cache it as valid again.
  cache.delete(hash);
}
