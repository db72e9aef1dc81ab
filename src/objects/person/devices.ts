import { and, asc, eq, gt, isNull, or } from "drizzle-orm";
import type { DrizzleSqliteDODatabase } from "drizzle-orm/durable-sqlite";
import type { DeviceView } from "../../domain/stream";
import { errorBody } from "../../lib/errors";
import type { DeviceCheck, DeviceClaim } from "./api";
import { inList } from "../../db/sql";
import { firstUseOfDay } from "../../lib/time";
import { devices } from "./schema";

/*
 * The person's devices (docs/security.md, "Tokens"): the object decides whether a person token still opens
 * its person's requests. The Worker asks here before it serves a person token (at most one second after
 * the last answer for a read, every time for a write); a revocation is written here first, so every
 * isolate refuses the token within a second, and no D1 statement is spent on the check. A token this
 * object has not seen is adopted from what its verification record says (its name, its creation, its
 * expiry); a revoked row stays, so a revocation that arrived first is never undone by an adoption.
 */

/** A token of a person whose account is gone. */
export const PERSON_GONE = { ok: false, reason: "the bearer token's person no longer exists" } as const;

/** What a device without a name (a token the operator minted) is listed as. */
export const OPERATOR_DEVICE = "minted by the operator";

/** Checks the token of `claim` at `now` and records its day's use; `firstUseToday`: D1's bookkeeping is due. */
export function check(db: DrizzleSqliteDODatabase, claim: DeviceClaim, now: number): DeviceCheck {
  const row = db.select().from(devices).where(eq(devices.tokenId, claim.tokenId)).get();
  if (row?.revokedAt != null) return { ok: false, reason: "the bearer token has been revoked" };
  const expiresAt = row ? row.expiresAt : (claim.expiresAt ?? null);
  if (expiresAt !== null && expiresAt <= now) return { ok: false, reason: "the bearer token has expired" };
  const usedAt = row ? row.usedAt : claim.usedAt;
  // The day's first use is recorded (and sent to D1), as `last_used_on` shows days.
  const due = firstUseOfDay(usedAt, now);
  if (!row)
    db.insert(devices)
      .values({ ...claim, usedAt: due ? now : usedAt })
      .run();
  else if (due) db.update(devices).set({ usedAt: now }).where(eq(devices.tokenId, row.tokenId)).run();
  return { ok: true, firstUseToday: due };
}

type DeviceRow = typeof devices.$inferSelect;

/** A device row that opens nothing any more at `now`: revoked, or expired. */
const ended = (row: DeviceRow, now: number) =>
  row.revokedAt !== null || (row.expiresAt !== null && row.expiresAt <= now);

/** Device `tokenId` as it stands at `now`: its expiry when it is live here, null when revoked, expired or unknown. */
export function live(db: DrizzleSqliteDODatabase, tokenId: number, now: number): { expiresAt: number | null } | null {
  const row = db.select().from(devices).where(eq(devices.tokenId, tokenId)).get();
  return row && !ended(row, now) ? { expiresAt: row.expiresAt } : null;
}

/**
 * Which of `tokenIds` are known here as no longer opening anything: revoked (a revocation keeps its
 * row, known or not) or expired. A device this object has not seen yet is not refused here; its first
 * use adopts it (`checkDevice`). One read.
 */
export function refusedAmong(db: DrizzleSqliteDODatabase, tokenIds: number[], now: number): Set<number> {
  if (tokenIds.length === 0) return new Set();
  const rows = db.select().from(devices).where(inList(devices.tokenId, tokenIds)).all();
  return new Set(rows.filter((row) => ended(row, now)).map((row) => row.tokenId));
}

/** Whether device `tokenId` is known here as revoked or expired (`refusedAmong`). */
export const refused = (db: DrizzleSqliteDODatabase, tokenId: number, now: number) =>
  refusedAmong(db, [tokenId], now).has(tokenId);

/**
 * The 401 for a stream's upgrade by a device this object knows as revoked or expired, else null: the
 * Worker's passing check may be a second old (a read's), or the device revoked since, so it is asked
 * again here, at the socket.
 */
export function upgradeRefusal(db: DrizzleSqliteDODatabase, tokenId: number, erased: boolean): Response | null {
  // An erased object's devices are gone with its storage: the account is, and so is every token of it.
  if (erased) return Response.json(errorBody(401, "the bearer token's account no longer exists"), { status: 401 });
  if (!refused(db, tokenId, Date.now())) return null;
  return Response.json(errorBody(401, "the bearer token has been revoked or has expired"), { status: 401 });
}

/** A sign-in's new device (its first use is still to come). */
export function add(db: DrizzleSqliteDODatabase, device: DeviceClaim): void {
  db.insert(devices).values(device).onConflictDoNothing().run();
}

/** Revokes device `tokenId` (kept as revoked, known or not); answers whether it was live here. */
export function revoke(db: DrizzleSqliteDODatabase, tokenId: number, now: number): boolean {
  const row = db.select({ revokedAt: devices.revokedAt }).from(devices).where(eq(devices.tokenId, tokenId)).get();
  if (row?.revokedAt != null) return false;
  db.insert(devices)
    .values({ tokenId, name: null, createdAt: now, usedAt: null, expiresAt: null, revokedAt: now })
    .onConflictDoUpdate({ target: devices.tokenId, set: { revokedAt: now } })
    .run();
  return row !== undefined;
}

/** Set once the tokens D1 held before this object kept devices (an operator's, unused yet) were adopted. */
const SYNCED = "devices-synced";

/**
 * The live devices, oldest first (`current`: the one asking); null until the directory's devices were
 * adopted once (`fromDirectory`, read from D1 by the Worker the first time this person lists them).
 */
export function list(
  db: DrizzleSqliteDODatabase,
  storage: DurableObjectStorage,
  currentTokenId: number,
  now: number,
  fromDirectory?: DeviceClaim[],
): DeviceView[] | null {
  if (fromDirectory) {
    for (const device of fromDirectory) db.insert(devices).values(device).onConflictDoNothing().run();
    storage.kv.put(SYNCED, true);
  } else if (storage.kv.get(SYNCED) !== true) return null;
  return db
    .select()
    .from(devices)
    .where(and(isNull(devices.revokedAt), or(isNull(devices.expiresAt), gt(devices.expiresAt, now))))
    .orderBy(asc(devices.tokenId))
    .all()
    .map((row) => ({
      id: row.tokenId,
      name: row.name ?? OPERATOR_DEVICE,
      created_at: new Date(row.createdAt).toISOString(),
      last_used_on: row.usedAt === null ? null : new Date(row.usedAt).toISOString().slice(0, 10),
      current: row.tokenId === currentTokenId,
    }));
}
