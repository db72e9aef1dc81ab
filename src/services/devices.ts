import { and, eq, gt, isNotNull, isNull, or, sql } from "drizzle-orm";
import { accessTokens } from "../db/schema";
import { notFound } from "../lib/errors";
import type { DeviceClaim } from "../objects/person/api";
import { CONTAINER_SCOPE, forgetInIsolate } from "./tokens";
import { WriteBatch } from "./outbox";
import type { Deps } from "./deps";

/*
 * A person's devices (docs/app.md, "Devices"): their person tokens, one per sign-in, named by the app that
 * signed in (`POST /auth/tokens`); a token the operator minted is listed as `minted by the operator`.
 * The person's object holds them (objects/person/devices.ts): listing them and checking a
 * token read no D1. The consent container's cookie tokens are not devices.
 */

/**
 * The caller's devices, oldest first (`current`: the one asking), as their object holds them. The first
 * listing of a person hands their object the person tokens D1 held before (one D1 read, once per person:
 * tokens the operator minted and nobody used yet); no later one reads D1.
 */
export async function listDevices(deps: Deps, personId: number, currentTokenId: number) {
  const person = deps.objects.of(personId);
  return (
    (await person.devices(currentTokenId)) ??
    (await person.devices(currentTokenId, await directoryDevices(deps, personId, new Date())))!
  );
}

/** Whether `tokenId` is one of person `personId`'s live devices. */
export async function ownsDevice(deps: Deps, personId: number, tokenId: number) {
  return (await listDevices(deps, personId, tokenId)).some((device) => device.id === tokenId);
}

/** The live person tokens D1 holds for `personId` (not the consent container's), as their object adopts them. */
async function directoryDevices(deps: Deps, personId: number, now: Date): Promise<DeviceClaim[]> {
  const rows = await deps.db
    .select({
      tokenId: accessTokens.id,
      name: accessTokens.deviceName,
      createdAt: accessTokens.createdAt,
      expiresAt: accessTokens.expiresAt,
      usedAt: accessTokens.lastUsedAt,
    })
    .from(accessTokens)
    .where(
      and(
        eq(accessTokens.personId, personId),
        isNull(accessTokens.revokedAt),
        or(isNull(accessTokens.expiresAt), gt(accessTokens.expiresAt, now)),
        sql`not exists (select 1 from json_each(${accessTokens.scopes}) where value = ${CONTAINER_SCOPE})`,
      ),
    );
  return rows.map((row) => ({
    tokenId: row.tokenId,
    name: row.name,
    createdAt: row.createdAt.getTime(),
    expiresAt: row.expiresAt?.getTime() ?? null,
    usedAt: row.usedAt?.getTime() ?? null,
  }));
}

/**
 * Revokes token `tokenId` of person `personId` (null: the operator's, any person's) — a device deleted, or
 * signing out when it is the caller's own. The person's object hears first: from then on it refuses the
 * token (every isolate within a second) and its open streams are closed with 4001. Then D1, the tokens'
 * directory, marks it revoked and its verification record in KV is rewritten as refused (the command's
 * index work), for the routes that do not ask the object. Another person's token, or one already revoked,
 * is a 404.
 */
export async function revokeDevice(deps: Deps, personId: number | null, tokenId: number, now = new Date()) {
  const mine = and(
    eq(accessTokens.id, tokenId),
    // A person signs out devices only: a consent-container session (not listed among them) is no
    // device of theirs, and goes with its device or by DELETE /apps/vcc/session.
    personId === null
      ? isNotNull(accessTokens.id)
      : and(
          eq(accessTokens.personId, personId),
          sql`not exists (select 1 from json_each(${accessTokens.scopes}) where value = ${CONTAINER_SCOPE})`,
        ),
    isNull(accessTokens.revokedAt),
  );
  const row = await deps.db
    .select({ hash: accessTokens.tokenHash, personId: accessTokens.personId })
    .from(accessTokens)
    .where(mine)
    .get();
  if (!row) throw notFound(`device ${tokenId} does not exist`);
  forgetInIsolate(row.hash, tokenId);
  if (row.personId !== null) await deps.objects.write(row.personId, (person) => person.revokeDevice(tokenId));
  const batch = new WriteBatch(deps, now);
  batch.add(deps.db.update(accessTokens).set({ revokedAt: now }).where(mine));
  batch.markStaleTokens([row.hash]);
  // The container sessions the device minted go with it (docs/consent.md), on the page too: this
  // isolate forgets each at once, as it forgets the device.
  let sessionsAt = -1;
  if (row.personId !== null) {
    const sessions = sql`${accessTokens.parentTokenId} = ${tokenId}`;
    batch.markStaleTokensOf(row.personId, sessions);
    sessionsAt = batch.add(
      deps.db
        .update(accessTokens)
        .set({ revokedAt: now })
        .where(and(sessions, isNull(accessTokens.revokedAt)))
        .returning({ hash: accessTokens.tokenHash }),
    );
  }
  const { results } = await batch.commit();
  forgetInIsolate(row.hash, tokenId);
  const sessions = sessionsAt < 0 ? [] : (results[sessionsAt] as { hash: string }[]);
  for (const session of sessions) forgetInIsolate(session.hash);
}
