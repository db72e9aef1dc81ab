import { and, eq, isNotNull, isNull, sql } from "drizzle-orm";
import { createDb } from "../db/client";
import { batchableAll } from "../db/sql";
import { accessTokens } from "../db/schema";
import type { WriteCondition } from "../db/write-guard";
import { base64url, sha256Hex } from "../lib/crypto";
import { ApiError, unauthorized } from "../lib/errors";
import { d1Fallback } from "../lib/fallback-gate";
import { DAY_MS, firstUseOfDay } from "../lib/time";
import type { Principal } from "../domain/principal";
import type { TokenUseMessage } from "../domain/queue-messages";
import { checkDevice, type DevicePrincipal, forgetDeviceCheck, isDevice } from "./device-checks";
import { WriteBatch } from "./outbox";
import type { Deps } from "./deps";
import { putReservedToken, reserveTokenRecord, settleTokenRecords } from "./trust-index/token-slots";
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

/** The uses this isolate sent (hash → ms): its cache's 30 s do not send them again. */
const usesSent = new Map<string, number>();

export type VerifyOptions = {
  /** Runs the bookkeeping off the hot path: the day's use sent to `uses`, and a new record's put. */
  onFirstUse?: (work: Promise<unknown>) => void;
  /** Send the day's first use of a token to the `token-uses` queue (`deps.usesQueue`); without it, nowhere. */
  countUses?: boolean;
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
  /** Read and write the token's verification record in the trust index (`deps.kv`); without it, D1 only. */
  recorded?: boolean;
  /** Runs before the D1 read; a thrown error (429) stops it. */
  beforeDatabase?: () => Promise<void>;
};

/**
 * Resolves a bearer token to its principal: the isolate's cache, then the
 * token's record in KV, and only for a token without one, D1 (SHA-256
 * lookup, then expiry and revocation), whose answer is then recorded.
 */
export async function verifyToken(
  deps: Deps,
  token: string,
  now: Date,
  { onFirstUse, countUses = false, fresh = false, write = false, recorded = false, beforeDatabase }: VerifyOptions = {},
): Promise<TokenCheck> {
  const { db, guard: writeGuard } = deps;
  const kv = recorded ? deps.kv : undefined;
  const uses = countUses ? deps.usesQueue : undefined;
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
        const usedAt = Math.max(record.usedAt ?? -Infinity, usesSent.get(hash) ?? -Infinity);
        entry = remember(hash, check.principal, record.expiresAt, Number.isFinite(usedAt) ? usedAt : null, now);
      }
    }
    if (entry) {
      const { principal } = entry;
      // A device's token is checked by its person's object; the D1 guard then only rides the request's D1
      // writes (a revocation made in D1 alone, `npm run token -- revoke` offline, still stops them).
      const device = isDevice(principal);
      guard?.arm({ ...tokenGuard(principal.tokenId, hash, now, kv && deps), ridesOnly: device });
      if (device)
        return await deviceAnswer(deps, principal, hash, now, { write, usedAt: entry.usedAt, uses, onFirstUse });
      if (kv && onFirstUse && uses && useIsDue(entry.usedAt, now)) {
        entry.usedAt = now.getTime(); // this isolate sends it once
        onFirstUse(sendUse(uses, hash, now));
      }
      return { ok: true, principal };
    }
  }
  // A token this isolate never saw valid pays the IP budget first (a write re-reads known ones freely).
  if (!cached) await beforeDatabase?.();

  // A token D1 holds gets its record, refused or not (unknown ones do not: they would fill KV). The read
  // that records it takes the key's write slot in the same statement (trust-index/token-slots.ts `reserveTokenRecord`).
  const recording = kv !== undefined && !fresh;
  const { row, reserved } = recording
    ? await reserveTokenRecord(plain, hash, now)
    : {
        row: await db.select(TOKEN_COLUMNS).from(accessTokens).where(eq(accessTokens.tokenHash, hash)).get(),
        reserved: false,
      };

  const check = toCheck(row, now);
  const device = check.ok && isDevice(check.principal);
  const bookkeeping =
    check.ok &&
    !device &&
    onFirstUse !== undefined &&
    uses !== undefined &&
    useIsDue(row!.lastUsedAt?.getTime() ?? null, now);
  if (row && recording) {
    const record = recordOf({ ...row, lastUsedAt: bookkeeping ? now : row.lastUsedAt }, now);
    const put = reserved
      ? putReservedToken(kv, hash, record)
      : "refused" in record
        ? settleTokenRecords({ ...deps, db: plain }, [hash], now)
        : Promise.resolve();
    if (onFirstUse) onFirstUse(put);
    else put.catch(() => undefined); // as before: nobody waits for the record
  }
  if (!check.ok) return check;
  const usedAt = bookkeeping ? now.getTime() : (row!.lastUsedAt?.getTime() ?? null);
  remember(hash, check.principal, row!.expiresAt?.getTime() ?? null, usedAt, now);
  if (bookkeeping) onFirstUse?.(sendUse(uses!, hash, now));
  if (isDevice(check.principal)) {
    const known = { write, usedAt: row!.lastUsedAt?.getTime() ?? null, uses, onFirstUse };
    return await deviceAnswer(deps, check.principal, hash, now, known);
  }
  return check;
}

/**
 * A device's token as its person's object answers (services/device-checks.ts): refused there (revoked,
 * expired, the person gone), this isolate forgets it; its day's first use goes to D1's bookkeeping.
 */
async function deviceAnswer(
  deps: Deps,
  principal: DevicePrincipal,
  hash: string,
  now: Date,
  {
    uses,
    onFirstUse,
    ...known
  }: { write: boolean; usedAt: number | null; uses: Queue<TokenUseMessage> | undefined } & Pick<
    VerifyOptions,
    "onFirstUse"
  >,
): Promise<TokenCheck> {
  const check = await checkDevice(deps, principal, now, known);
  if (!check.ok) {
    cache.delete(hash);
    return check;
  }
  if (check.firstUseToday && uses && onFirstUse) onFirstUse(sendUse(uses, hash, now));
  return { ok: true, principal };
}

/**
 * Forgets a token's verification in this isolate and rewrites its record in KV from D1 through the
 * index work (its signing configuration changed): other isolates follow within 30 s.
 */
export async function forgetVerifiedToken(deps: Deps, tokenHash: string, now = new Date()) {
  cache.delete(tokenHash);
  await settleTokenRecords(deps, [tokenHash], now);
}

/** Forgets a token's verification in this isolate only (its KV record is rewritten by the revoking command). */
export function forgetInIsolate(tokenHash: string, tokenId?: number): void {
  cache.delete(tokenHash);
  if (tokenId !== undefined) forgetDeviceCheck(tokenId);
}

function remember(hash: string, principal: Principal, expiresAt: number | null, usedAt: number | null, now: Date) {
  if (cache.size >= CACHE_MAX) cache.delete(cache.keys().next().value!);
  const until = Math.min(now.getTime() + CACHE_TTL_MS, expiresAt ?? Infinity);
  const entry: Cached = { principal, until, expiresAt, usedAt };
  cache.set(hash, entry);
  return entry;
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

/** `deps`: the request's, when the token's record is kept in the trust index (a refusal rewrites it); else undefined. */
function tokenGuard(tokenId: number, hash: string, now: Date, deps: Deps | undefined): WriteCondition {
  return {
    statement: (database) => database.prepare(TOKEN_STILL_VALID).bind(tokenId, now.getTime()),
    refusal: async (database) => {
      const db = createDb(database as D1Database);
      const row = await db.select(TOKEN_COLUMNS).from(accessTokens).where(eq(accessTokens.id, tokenId)).get();
      const check = toCheck(row, now);
      if (check.ok) return null;
      cache.delete(hash);
      // Invalid is final: the refused record goes through the index work (recorded, applied now).
      if (deps) await settleTokenRecords({ ...deps, db }, [hash], now).catch(() => undefined);
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

/**
 * Whether the token's record in KV says refused (an unreadable KV: no): a revocation made in D1 alone, which
 * the person's object never heard of, once the minute sweep rewrote the record (a stream ticket's check).
 */
export async function recordRefuses({ kv }: Deps, hash: string): Promise<boolean> {
  const record = await readRecord(kv, hash);
  return record !== null && record !== KV_FAILED && "refused" in record;
}

const indexUnavailable = () =>
  new ApiError(503, "tokens cannot be checked right now (their index is unavailable); retry in a second", {
    "Retry-After": "1",
  });

/** `last_used` and `last_login` are recorded at the day's first use of each token (`recordTokenUses`). */
const useIsDue = (lastUsedAt: number | null, now: Date) => firstUseOfDay(lastUsedAt, now.getTime());

/** The day's first use of a token, sent to the `token-uses` queue (no D1 statement on the request path). */
function sendUse(uses: Queue<TokenUseMessage>, hash: string, now: Date) {
  if (usesSent.size >= CACHE_MAX) usesSent.delete(usesSent.keys().next().value!);
  usesSent.set(hash, now.getTime());
  return uses.send({ h: hash, at: now.getTime() });
}

/**
 * The `token-uses` consumer's work (docs/architecture.md, "Tokens"): the batch's uses (up to 100
 * tokens) in one statement — `last_used` of every token whose was written a day before its use or
 * earlier, and by trigger (`token_use_is_a_login`, drizzle/0027) `last_login` of its person, in
 * the same statement, without touching their `updated_at` — then the records of the service tokens
 * it changed rewritten through the index work, so that other isolates see the day's use recorded (a
 * device's day of use is its person's object's to know: its record is not rewritten for it).
 * Conditional, so a use sent twice (two isolates) changes the rows once; a retried batch (its
 * records' rewrite failed) matches the rows it set again (same time: no change), so the rewrite is retried too.
 */
export async function recordTokenUses(deps: Deps, uses: TokenUseMessage[], now: Date) {
  if (uses.length === 0) return { tokens: 0 };
  const latest = new Map<string, number>();
  for (const { h, at } of uses) latest.set(h, Math.max(at, latest.get(h) ?? at));
  const list = JSON.stringify([...latest]);
  const changed = await deps.db.all<{ hash: string; device: 0 | 1 }>(sql`
    update access_tokens set last_used_at = u.used_at
    from (select json_extract(value, '$[0]') as hash, json_extract(value, '$[1]') as used_at from json_each(${list})) as u
    where token_hash = u.hash
      and (last_used_at is null or last_used_at / ${sql.raw(String(DAY_MS))} < u.used_at / ${sql.raw(String(DAY_MS))}
        or last_used_at = u.used_at)
    returning token_hash as hash, (person_id is not null and not exists
      (select 1 from json_each(scopes) where value = ${CONTAINER_SCOPE})) as device`);
  // A device's use is its object's to remember (objects/person/devices.ts): its record stays as written. The
  // others' records carry the day's use, so that no isolate sends it again.
  const others = changed.filter((row) => row.device !== 1).map((row) => row.hash);
  if (others.length > 0) await settleTokenRecords(deps, others, now);
  return { tokens: changed.length };
}

export { CONTAINER_SCOPE };
const CONTAINER_PATHS = "/apps/vcc/";
const CONTAINER_TOKEN_DAYS = 30;
/** Live container sessions a device keeps: a new one past them revokes the oldest. */
export const SESSIONS_PER_DEVICE = 5;

/** Whether `principal` may act on `path`: a container-scoped token only under /apps/vcc/. */
export function principalAllowedOn(principal: Principal, path: string): boolean {
  return principal.kind !== "person" || principal.scope !== CONTAINER_SCOPE || path.startsWith(CONTAINER_PATHS);
}

/** Mints a container-scoped token for `personId`; the token is returned once, only its hash is stored. */
/**
 * A new token with its readable prefix (`pk_`, `vcc_`): 32 random bytes, base64url; it is shown once,
 * only its SHA-256 (`hash`) and first characters (`prefix`) are stored.
 */
export async function newToken(kind: "pk" | "vcc") {
  const token = `${kind}_${base64url(crypto.getRandomValues(new Uint8Array(32)))}`;
  return { token, hash: await sha256Hex(token), prefix: token.slice(0, 8) };
}

export async function mintContainerToken(
  deps: Deps,
  personId: number,
  deviceTokenId: number,
  now: Date,
): Promise<string> {
  const { token, hash, prefix } = await newToken("vcc");
  const batch = new WriteBatch(deps, now);
  const until = now.getTime() + CONTAINER_TOKEN_DAYS * 86_400_000;
  // A device keeps its newest sessions only: a browser holds one cookie, so each sign-in leaves the
  // one before unreachable; past SESSIONS_PER_DEVICE the oldest are revoked in this batch.
  const older = sql`${accessTokens.parentTokenId} = ${deviceTokenId} and ${accessTokens.revokedAt} is null
    and ${accessTokens.id} not in (select id from ${accessTokens} where parent_token_id = ${deviceTokenId}
      and revoked_at is null order by id desc limit ${SESSIONS_PER_DEVICE - 1})`;
  batch.markStaleTokensOf(personId, older);
  const retired = batch.add(
    deps.db.update(accessTokens).set({ revokedAt: now }).where(older).returning({ hash: accessTokens.tokenHash }),
  );
  // Tied to the device that asked: revoked with it, expiring no later, and not minted once it is revoked.
  const minted = batch.add(
    batchableAll<{ id: number }>(
      deps.db,
      sql`insert into ${accessTokens} (token_hash, prefix, person_id, scopes, expires_at, parent_token_id, created_at)
          select ${hash}, ${prefix}, ${personId}, ${JSON.stringify([CONTAINER_SCOPE])},
                 min(${until}, coalesce(d.expires_at, ${until})), d.id, ${now.getTime()}
          from ${accessTokens} d
          where d.id = ${deviceTokenId} and d.person_id = ${personId} and d.revoked_at is null
            and (d.expires_at is null or d.expires_at > ${now.getTime()})
          returning id`,
    ),
  );
  const { results } = await batch.commit();
  // The sessions it retired stop working on the page at once in this isolate, as a signed-out one does.
  for (const { hash } of results[retired] as { hash: string }[]) cache.delete(hash);
  if ((results[minted] as unknown[]).length === 0) throw unauthorized("the bearer token has been revoked");
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
  const session = and(
    eq(accessTokens.tokenHash, hash),
    isNotNull(accessTokens.personId),
    sql`exists (select 1 from json_each(${accessTokens.scopes}) where value = ${CONTAINER_SCOPE})`,
  )!;
  batch.add(
    deps.db
      .update(accessTokens)
      .set({ revokedAt: now })
      .where(and(session, isNull(accessTokens.revokedAt))),
  );
  // Only a session D1 holds: a made-up cookie, sent by anyone without an account, records nothing.
  batch.markStaleTokensWhere(session);
  await batch.commit();
  // After the write, so no verification in between can cache it as valid again.
  cache.delete(hash);
}
