import type { PushRegistration, PushTarget } from "../../domain/push";
import { badRequest, notFound } from "../../lib/errors";
import { fromBase64url } from "../../lib/crypto";
import { endpointProblem } from "../../lib/outbound-url";
import type { Deps } from "../deps";
import { ownsDevice } from "../devices";
import { holdAddress } from "./directory";

/*
 * Registering where a device is woken (`PUT`/`DELETE /me/devices/{id}/push`,
 * docs/app.md "Push"): kept by the person's object (objects/person/push.ts),
 * one registration per device, and one device per push address (directory.ts).
 * No D1 statement: a device registering itself was just checked, another of
 * the caller's devices is looked up in their object (objects/person/devices.ts),
 * and anyone else's is a 404.
 */

/** The caller: a person and the token (device) asking. */
export type Caller = { personId: number; tokenId: number };

async function checkDevice(deps: Deps, caller: Caller, deviceId: number) {
  if (deviceId === caller.tokenId) return;
  if (!(await ownsDevice(deps, caller.personId, deviceId))) throw notFound(`device ${deviceId} does not exist`);
}

/** Why a Web Push subscription cannot be used, checked beyond its schema: the endpoint and the key. */
async function subscriptionProblem(target: PushTarget, environment: string): Promise<string | null> {
  if (target.kind !== "webpush") return null;
  const problem = endpointProblem(target.subscription.endpoint, environment);
  if (problem) return `subscription.endpoint ${problem}`;
  try {
    const point = fromBase64url(target.subscription.keys.p256dh);
    await crypto.subtle.importKey("raw", point, { name: "ECDH", namedCurve: "P-256" }, false, []);
  } catch {
    return "subscription.keys.p256dh must be a point on P-256";
  }
  return null;
}

/** Registers `target` for device `deviceId` of the caller, replacing its registration. */
export async function registerPush(
  deps: Deps,
  caller: Caller,
  deviceId: number,
  target: PushTarget,
): Promise<PushRegistration> {
  await checkDevice(deps, caller, deviceId);
  const problem = await subscriptionProblem(target, deps.environment);
  if (problem) throw badRequest(problem);
  const registration = await deps.objects.write(caller.personId, (person) => person.changePush(deviceId, target));
  if (!registration) throw notFound(`device ${deviceId} does not exist`);
  // The address's previous holder (another account signed in on this install before) is woken there no more.
  await holdAddress(deps, { personId: caller.personId, deviceId }, target);
  return registration;
}

/** Removes device `deviceId`'s registration (none: nothing changes). */
export async function unregisterPush(deps: Deps, caller: Caller, deviceId: number): Promise<void> {
  await checkDevice(deps, caller, deviceId);
  await deps.objects.write(caller.personId, (person) => person.changePush(deviceId, null));
}

/** A registration as `PUT /me/devices/{id}/push` answers it: the device, where, since when. */
export const pushRegistrationView = (registration: PushRegistration) => ({
  device_id: registration.deviceId,
  ...registration.target,
  updated_at: new Date(registration.updatedAt).toISOString(),
});
