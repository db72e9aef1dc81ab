import { putPushHolder } from "../../db/kv-writes";
import { KEY_KINDS } from "../../domain/key-kinds";
import { addressOf, type PushTarget } from "../../domain/push";
import { sha256Hex } from "../../lib/crypto";
import { logError } from "../../lib/log";
import type { Deps } from "../deps";

/*
 * One device per push address (docs/app.md, "Push"). An app install has one push address (its FCM or
 * APNs token, its Web Push endpoint) whoever is signed in: when a second account signs in on it and
 * registers, the first account's registration of that address must go, or the first account's chats
 * would keep waking a phone someone else now uses. Each person's registrations are in their own
 * object, so the address's last holder is kept across people in KV (`psh:<SHA-256 of the address>` →
 * person and device): a registration reads it (one KV read), tells the previous holder's object to
 * drop its registration while it is still that target, and writes the new holder (a KV write only
 * when the holder changes, or to renew it once a week; the key lives 60 days).
 */

/** A holder is written again after this long, so a device registering on every launch keeps its key. */
const RENEW_MS = 7 * 24 * 3600_000;
/** An address no one registered for this long is forgotten (an app gone, a device lost). */
const HOLDER_TTL_SECONDS = 60 * 24 * 3600;

type Holder = { p: number; d: number; at: number };

/**
 * Device `deviceId` of person `personId` just registered `target`: the previous holder of its address,
 * if another device, stops being woken there. Never throws: a failure is logged, and the registration
 * stands (the previous holder keeps its registration until the address answers 404 or 410 to them,
 * or they register again).
 */
export async function holdAddress(
  deps: Deps,
  owner: { personId: number; deviceId: number },
  target: PushTarget,
  now = Date.now(),
): Promise<void> {
  try {
    const key = KEY_KINDS.psh.key(await sha256Hex(addressOf(target)));
    const held = await deps.kv.get<Holder>(key, "json");
    const same = held?.p === owner.personId && held.d === owner.deviceId;
    if (held && !same) {
      await deps.objects.write(held.p, (person) => person.changePush(held.d, null, target));
    }
    if (!same || now - held.at > RENEW_MS) {
      const value: Holder = { p: owner.personId, d: owner.deviceId, at: now };
      await putPushHolder(deps.kv, key, JSON.stringify(value), HOLDER_TTL_SECONDS);
    }
  } catch (err) {
    logError("the push address's previous holder was not told", err, { kind: target.kind });
  }
}
