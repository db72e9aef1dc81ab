import { sql } from "drizzle-orm";
import type { Db } from "../db/client";
import { accessTokens } from "../db/schema";
import { inList } from "../db/sql";
import type { Principal } from "../domain/principal";
import { signingRefOf, type StoredSigning } from "../domain/provider-signing";
import { KEY_KINDS, keysOfKind } from "../domain/key-kinds";

/*
 * The verification record of a token in KV (docs/architecture.md, "Tokens"):
 * `tok:<sha256 of the token>`, never with a TTL. Written through the one
 * writer of KV keys (db/kv-writes.ts) only: by the verification that read D1
 * and the daily bookkeeping, each having taken the key's write slot in the
 * statement that read the token (services/trust-index/token-slots.ts
 * `reserveTokenRecord`), and by the index work of every command that
 * invalidates the token, which waits out a slot taken less than a second ago
 * and retries a refused put until it lands. A request whose token has a
 * record reads no D1.
 */

export const tokenKey = KEY_KINDS.tok.key;

/** `usedAt`: the token's `last_used` as D1 had it when the record was written (ms; null: never). */
export type TokenRecord =
  { v: 1; principal: Principal; expiresAt: number | null; usedAt: number | null } | { v: 1; refused: string };

export type TokenCheck = { ok: true; principal: Principal } | { ok: false; reason: string };

/**
 * Container-scoped person tokens (docs/consent.md): the consent container's
 * `session` cookie holds one, so a stolen cookie cannot call the rest of the
 * API. Stored like any person token, with `scopes: ["vcc"]`.
 */
export const CONTAINER_SCOPE = "vcc";

export type TokenRow = {
  id: number;
  personId: number | null;
  serviceName: string | null;
  scopes: string[];
  expiresAt: Date | null;
  revokedAt: Date | null;
  /** A person token's device name (null: minted by the operator) and creation; absent where not read. */
  deviceName?: string | null;
  createdAt?: Date;
  /** A provider token's signing configuration (docs/providers.md); absent where not read. */
  signing?: StoredSigning | null;
};

/** The columns a token's check and record read: one set for every read of a token. */
export const TOKEN_COLUMNS = {
  id: accessTokens.id,
  personId: accessTokens.personId,
  serviceName: accessTokens.serviceName,
  scopes: accessTokens.scopes,
  expiresAt: accessTokens.expiresAt,
  revokedAt: accessTokens.revokedAt,
  lastUsedAt: accessTokens.lastUsedAt,
  signing: accessTokens.signing,
  deviceName: accessTokens.deviceName,
  createdAt: accessTokens.createdAt,
};

/** A token row (undefined: no such token) checked at `now`. */
export function toCheck(row: TokenRow | undefined, now: Date): TokenCheck {
  if (!row)
    return {
      ok: false,
      reason: "the bearer token is unknown: this API never issued it, or it was deleted, so it is not valid",
    };
  if (row.revokedAt) return { ok: false, reason: "the bearer token has been revoked" };
  if (row.expiresAt && row.expiresAt.getTime() <= now.getTime())
    return { ok: false, reason: "the bearer token has expired" };
  if (row.personId !== null) {
    const expires = row.expiresAt ? { expiresAt: row.expiresAt.getTime() } : {};
    const device = row.createdAt
      ? { device: { name: row.deviceName ?? null, createdAt: row.createdAt.getTime() } }
      : {};
    return {
      ok: true,
      principal: row.scopes.includes(CONTAINER_SCOPE)
        ? { kind: "person", tokenId: row.id, personId: row.personId, scope: CONTAINER_SCOPE, ...expires }
        : { kind: "person", tokenId: row.id, personId: row.personId, ...expires, ...device },
    };
  }
  // A provider token's signing configuration travels with its principal (and so with its record),
  // a Twilio auth token only sealed (signingRefOf).
  const principal: Principal = {
    kind: "service",
    tokenId: row.id,
    service: row.serviceName ?? "service",
    scopes: row.scopes,
  };
  const signing = signingRefOf(row.signing);
  return { ok: true, principal: signing ? { ...principal, signing } : principal };
}

/** The record of a token row as D1 has it now. */
export function recordOf(row: (TokenRow & { lastUsedAt: Date | null }) | undefined, now: Date): TokenRecord {
  const check = toCheck(row, now);
  if (!check.ok) return { v: 1, refused: check.reason };
  return {
    v: 1,
    principal: check.principal,
    expiresAt: row!.expiresAt?.getTime() ?? null,
    usedAt: row!.lastUsedAt?.getTime() ?? null,
  };
}

/** What a record says at `now`; null: it is not one this version reads (a miss). */
export function checkOfRecord(record: TokenRecord | null, now: Date): TokenCheck | null {
  if (record === null || record.v !== 1) return null;
  if ("refused" in record) return { ok: false, reason: record.refused };
  if (record.expiresAt !== null && record.expiresAt <= now.getTime())
    return { ok: false, reason: "the bearer token has expired" };
  // A record written before principals carried their expiry: its own `expiresAt` says it.
  const principal = withoutClearSecret(record.principal);
  if (principal.kind === "person" && record.expiresAt !== null && principal.expiresAt === undefined) {
    return { ok: true, principal: { ...principal, expiresAt: record.expiresAt } };
  }
  return { ok: true, principal };
}

/**
 * A principal read from a record an older version wrote may carry a Twilio
 * auth token in clear: it is dropped here (the sealed one is read from D1
 * where needed), so the isolate never re-writes it, and the minute's sealing
 * job rewrites the record (services/provider-secrets.ts).
 */
function withoutClearSecret(principal: Principal): Principal {
  if (principal.kind !== "service" || principal.signing === undefined) return principal;
  const signing = signingRefOf(principal.signing);
  const { signing: _stored, ...rest } = principal;
  return signing ? { ...rest, signing } : rest;
}

/**
 * The records of these `tok:` keys from D1, in one read whatever their number
 * (the hashes bound as one JSON value). A token D1 does not hold is refused.
 */
export async function computeTokenRecords(db: Db, keys: string[], now: Date): Promise<Map<string, string>> {
  const hashes = keysOfKind(keys, "tok").map(KEY_KINDS.tok.parse);
  if (hashes.length === 0) return new Map();
  const rows = await db
    .select({ hash: accessTokens.tokenHash, ...TOKEN_COLUMNS })
    .from(accessTokens)
    .where(sql`${inList(accessTokens.tokenHash, hashes)}`)
    .all();
  const byHash = new Map(rows.map((row) => [row.hash, row]));
  return new Map(hashes.map((hash) => [tokenKey(hash), JSON.stringify(recordOf(byHash.get(hash), now))]));
}
