import { ApiError } from "../lib/errors";
import { logError } from "../lib/log";
import type { DeviceCheck } from "../objects/person/api";
import type { Principal } from "../domain/principal";
import type { Deps } from "./deps";

/*
 * Whether a person token still opens its person's requests is the person's object's answer
 * (objects/person/devices.ts, docs/security.md "Tokens"): no D1 statement. This isolate keeps a passing
 * answer for a read at most `DEVICE_CHECK_FOR_MS`, so a revocation, written to the object first, refuses
 * the token's reads within a second in every isolate; a write always asks, so a revoked token writes
 * nothing once its revocation answered. Container tokens (the consent container's cookie) are not devices.
 */

export const DEVICE_CHECK_FOR_MS = 1_000;
const REMEMBERED_MAX = 5_000;
/** Token id → until when its last passing answer serves this isolate's reads (ms). */
const passed = new Map<number, number>();

export type DevicePrincipal = Extract<Principal, { kind: "person" }>;

/** Whether `principal` is a device's token (a person token that is not the consent container's). */
export const isDevice = (principal: Principal): principal is DevicePrincipal =>
  principal.kind === "person" && principal.scope === undefined;

/** The object's answer for `principal`'s token at `now`, or this isolate's passing one of the last second. */
export async function checkDevice(
  { objects }: Deps,
  principal: DevicePrincipal,
  now: Date,
  { write, usedAt }: { write: boolean; usedAt: number | null },
): Promise<DeviceCheck> {
  const until = passed.get(principal.tokenId);
  if (!write && until !== undefined && until > now.getTime()) return { ok: true, firstUseToday: false };
  let check: DeviceCheck;
  try {
    check = await objects.of(principal.personId).checkDevice({
      tokenId: principal.tokenId,
      name: principal.device?.name ?? null,
      createdAt: principal.device?.createdAt ?? now.getTime(),
      expiresAt: principal.expiresAt ?? null,
      usedAt,
    });
  } catch (err) {
    logError("a device check failed", err);
    throw new ApiError(503, "the token cannot be checked right now; retry in a second", { "Retry-After": "1" });
  }
  if (!check.ok) passed.delete(principal.tokenId);
  else {
    if (passed.size >= REMEMBERED_MAX) passed.delete(passed.keys().next().value!);
    passed.set(principal.tokenId, now.getTime() + DEVICE_CHECK_FOR_MS);
  }
  return check;
}

/** This isolate forgets token `tokenId`'s passing answer (its revocation was just written). */
export function forgetDeviceCheck(tokenId: number): void {
  passed.delete(tokenId);
}
