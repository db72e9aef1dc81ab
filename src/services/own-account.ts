import { personGone } from "../lib/answer";
import type { Deps } from "./deps";

/**
 * The caller's own account as `GET /me` answers it (docs/decisions.md,
 * "Me"): their names, secure number and companies with the roles they hold
 * (companies by id, roles by name), answered by their object from the facts
 * D1 told it (docs/architecture.md, "Names travel with facts"): no D1
 * statement once it holds them (docs/capacity.md counts an app's daily
 * `/me`). A 401 refusal when the person is gone (the token outlived them
 * within the token record's window).
 */
export async function ownAccount(deps: Deps, personId: number) {
  const account = await deps.objects.of(personId).ownAccount();
  if (!account) return personGone();
  const { version: _, ...shown } = account;
  return { ok: true as const, ...shown };
}
