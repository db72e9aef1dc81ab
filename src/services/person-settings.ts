import type { CallPolicy } from "../domain/caller-verification";
import type { Deps } from "./deps";

/** A person's settings on the wire (`GET`/`PUT /me/settings`). */
export type PersonSettings = { calls: CallPolicy };

/** The person's settings, from their own object. */
export async function readSettings(deps: Deps, personId: number): Promise<PersonSettings> {
  return { calls: await deps.objects.of(personId).callPolicy() };
}

/**
 * Changes the person's settings in their own object (docs/decisions.md,
 * "Caller verification"): `calls` travels in their receiver record, so the
 * next lookups (within KV's 60 s everywhere) honour it without a D1 read.
 */
export async function changeSettings(
  deps: Deps,
  personId: number,
  change: Partial<PersonSettings>,
): Promise<PersonSettings> {
  const wanted = change.calls;
  const calls = await deps.objects.write(personId, (person) =>
    wanted === undefined ? person.callPolicy() : person.setCallPolicy(wanted),
  );
  return { calls };
}
