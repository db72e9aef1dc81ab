import { createdActivity, type ActivityInput, type ActivityType } from "../domain/activity";
import type { Deps } from "./deps";
import { accepted } from "./person-objects";

/*
 * Activity (docs/decisions.md, "Activity"): each person's feed lives in their
 * own object (objects/person/person.ts), which also names the parties: names
 * travel with facts and deliveries (docs/architecture.md), so neither a chat
 * nor a page reads D1.
 */

export type { ActivityInput, ActivityType, PartyType } from "../domain/activity";

/**
 * Who records an activity, and whose log a call record is (docs/decisions.md,
 * "Activity"): a message or an outgoing call is recorded by its sender, an
 * incoming call by its receiver.
 */
export const recordedBy = (type: ActivityType): "sendable" | "receivable" =>
  type.startsWith("incoming_") ? "receivable" : "sendable";

/**
 * Stores an activity `me` recorded, in their object: a call record in their
 * feed only; a message also in the other person's feed, under the same id
 * (the sender's object forwards it, idempotently on (sender, `message_id`),
 * so a retried POST answers the first record and creates nothing). The daily
 * budget is checked and charged inside the object: 429 beyond it, nothing
 * written. A message to an id that is no account (the receiver's object
 * finds none in its facts) is kept in the sender's feed only (the answer is
 * the same either way).
 */
export async function recordActivity(deps: Deps, me: number, input: ActivityInput) {
  const other = input.receivable_id;
  const toPerson = input.type.startsWith("chat_") && input.receivable_type === "person" && other !== me;
  const { row } = accepted(await deps.objects.write(me, (person) => person.record(input, toPerson ? other : null)));
  return createdActivity(row);
}

/**
 * The activities in `personId`'s feed with an id above `afterId`, oldest
 * first, at most `limit` (docs/decisions.md); parties read as
 * `AppModelsPerson` / `AppModelsCompany`, named only when they know the
 * reader, by the reader's object (objects/person/peers.ts). A person whose
 * object finds no account reads as null.
 */
export async function activitiesAfter(deps: Deps, personId: number, afterId: number, limit: number) {
  return deps.objects.of(personId).feedAfter(afterId, limit);
}

/** Development only: wipes the person's feed and blocked calls (docs/decisions.md). */
export async function clearHistory(deps: Deps, personId: number) {
  await deps.objects.write(personId, (person) => person.clearHistory());
}
