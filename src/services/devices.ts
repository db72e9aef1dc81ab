import { and, asc, eq, gt, isNotNull, isNull, or, sql } from "drizzle-orm";
import { accessTokens } from "../db/schema";
import type { DeviceView } from "../domain/stream";
import { notFound } from "../lib/errors";
import { CONTAINER_SCOPE, forgetInIsolate } from "./tokens";
import { WriteBatch } from "./outbox";
import type { Deps } from "./deps";

/*
 * A person's devices (docs/app.md, "Devices"): their person tokens, one per sign-in, named by the app
 * that signed in (`POST /auth/tokens`); a token the operator minted is listed as `minted by the
 * operator`. The consent container's cookie tokens are not devices.
 */

export const OPERATOR_DEVICE = "minted by the operator";

const live = (personId: number, now: Date) =>
  and(
    eq(accessTokens.personId, personId),
    isNull(accessTokens.revokedAt),
    or(isNull(accessTokens.expiresAt), gt(accessTokens.expiresAt, now)),
    sql`not exists (select 1 from json_each(${accessTokens.scopes}) where value = ${CONTAINER_SCOPE})`,
  );

type DeviceRow = { id: number; deviceName: string | null; createdAt: Date; lastUsedAt: Date | null };

export const deviceView = (row: DeviceRow, currentTokenId: number | null): DeviceView => ({
  id: row.id,
  name: row.deviceName ?? OPERATOR_DEVICE,
  created_at: row.createdAt.toISOString(),
  last_used_on: row.lastUsedAt ? row.lastUsedAt.toISOString().slice(0, 10) : null,
  current: row.id === currentTokenId,
});

const deviceColumns = {
  id: accessTokens.id,
  deviceName: accessTokens.deviceName,
  createdAt: accessTokens.createdAt,
  lastUsedAt: accessTokens.lastUsedAt,
};

/** The caller's devices, oldest first (`current`: the one asking). */
export async function listDevices(deps: Pick<Deps, "db">, personId: number, currentTokenId: number, now = new Date()) {
  const rows = await deps.db
    .select(deviceColumns)
    .from(accessTokens)
    .where(live(personId, now))
    .orderBy(asc(accessTokens.id));
  return rows.map((row) => deviceView(row, currentTokenId));
}

/** Whether `tokenId` is one of person `personId`'s devices (a live person token of theirs). */
export async function ownsDevice(deps: Pick<Deps, "db">, personId: number, tokenId: number, now = new Date()) {
  const row = await deps.db
    .select({ id: accessTokens.id })
    .from(accessTokens)
    .where(and(eq(accessTokens.id, tokenId), live(personId, now)))
    .get();
  return row !== undefined;
}

/**
 * Revokes token `tokenId` of person `personId` (a device deleted, or signing out when it is the caller's
 * own): revoked in D1, its verification record in KV rewritten as refused (the command's index work),
 * forgotten by this isolate, and its open streams closed with 4001 at once. Another person's token, or one
 * already revoked, is a 404.
 */
export async function revokeDevice(deps: Deps, personId: number | null, tokenId: number, now = new Date()) {
  const mine = and(
    eq(accessTokens.id, tokenId),
    personId === null ? isNotNull(accessTokens.id) : eq(accessTokens.personId, personId),
    isNull(accessTokens.revokedAt),
  );
  const row = await deps.db
    .select({ hash: accessTokens.tokenHash, personId: accessTokens.personId })
    .from(accessTokens)
    .where(mine)
    .get();
  if (!row) throw notFound(`device ${tokenId} does not exist`);
  const batch = new WriteBatch(deps, now);
  batch.add(deps.db.update(accessTokens).set({ revokedAt: now }).where(mine));
  // Its verification record in KV is rewritten as refused right after the commit (the index work).
  batch.reindexTokens([row.hash]);
  // The object is told as soon as D1 committed, beside the record's rewrite (which may wait out a second).
  const owner = row.personId;
  await batch.commit({
    committed: async () => {
      forgetInIsolate(row.hash);
      if (owner !== null)
        await deps.objects
          .of(owner)
          .tokenRevoked(tokenId)
          .catch(() => undefined);
    },
  });
  forgetInIsolate(row.hash);
}
