import type { BlockedCallRow } from "../objects/person/api";
import type { Deps } from "./deps";
import { logError } from "../lib/log";
import { blockedCallView } from "../domain/activity";
import type { BlockedCallInput } from "./trust-lookup";

/*
 * The blocked calls trust-lookup records (docs/decisions.md, "Blocked calls"): grouped per receiver
 * into their object, and those past the number's share of the provider's budget counted, not listed
 * (docs/decisions.md, "Rate limits").
 */

/**
 * Records a blocked call after the answer (the caller passes the returned
 * promise to `waitUntil`): appended to the receiver's own object, which keeps
 * their newest 1,000 and 90 days (docs/architecture.md). The provider never
 * waits for it; a failed append is retried once, then logged, never surfaced.
 *
 * Calls to one receiver arriving in this isolate while a group is open share
 * one call into their object: the first call of a group (its leader) sends
 * it, later ones only add their row and return at once, so no request ever
 * awaits a promise another request's I/O resolves (workerd cancels those:
 * "Promise will never complete"). A quiet receiver's group is open
 * `QUIET_WINDOW_MS`; a receiver that had a group within the last second is
 * hot, and its groups stay open `HOT_WINDOW_MS`, so one isolate makes at most
 * ten appends a second to a hot receiver's object however many calls arrive.
 *
 * A call to a number past its share of the provider's budget (`listed` false; rate-limit.ts) is
 * counted, not listed (docs/decisions.md, "Rate limits"; §12.1's hot receiver): the count rides the
 * next group into the object, or goes alone within a second, and the object adds it to its own count
 * (objects/person/blocked.ts `countUnlisted`).
 */
export function recordBlockedCall(deps: Deps, call: BlockedCallInput, listed = true): Promise<void> {
  const open = appending.get(call.personId);
  if (!listed) {
    // Past its number's share (rate-limit.ts): counted, not listed. A count joins any open group, else
    // this isolate's count for the receiver waits for the next group (at most `MAX_UNLISTED_WAIT_MS`).
    if (open) {
      open.unlisted++;
      return Promise.resolve();
    }
    const waiting = (unlistedWaiting.get(call.personId) ?? 0) + 1;
    unlistedWaiting.set(call.personId, waiting);
    if (waiting > 1) return Promise.resolve();
    return scheduler.wait(MAX_UNLISTED_WAIT_MS).then(() => flushUnlisted(deps, call.personId));
  }
  const row: BlockedCallRow = {
    callerId: call.callerId ?? null,
    countryCode: call.countryCode,
    phoneNumber: call.phoneNumber,
    reason: call.reason ?? null,
    createdAt: Date.now(),
  };
  if (open && open.rows.length < MAX_APPEND) {
    open.rows.push(row);
    return Promise.resolve();
  }
  const now = Date.now();
  const hot = now - (lastSent.get(call.personId) ?? -Infinity) < HOT_MS;
  const group = { rows: [row], unlisted: takeUnlisted(call.personId) };
  appending.set(call.personId, group);
  return scheduler.wait(hot ? HOT_WINDOW_MS : QUIET_WINDOW_MS).then(async () => {
    if (appending.get(call.personId) === group) appending.delete(call.personId);
    lastSent.set(call.personId, Date.now());
    if (lastSent.size > 10_000) lastSent.clear();
    await append(deps, call.personId, group.rows, group.unlisted);
  });
}

/** Sends the count of unlisted calls to `personId` waiting in this isolate, unless a group took it. */
function flushUnlisted(deps: Deps, personId: number) {
  const unlisted = takeUnlisted(personId);
  return unlisted > 0 ? append(deps, personId, [], unlisted) : Promise.resolve();
}

function takeUnlisted(personId: number) {
  const count = unlistedWaiting.get(personId) ?? 0;
  unlistedWaiting.delete(personId);
  return count;
}

/** One call into the receiver's object: `rows` listed and `unlisted` counted; retried once, then logged. */
async function append({ objects }: Deps, personId: number, rows: BlockedCallRow[], unlisted: number) {
  for (let attempt = 1; ; attempt++) {
    try {
      return await objects.write(personId, (person) => person.recordBlockedCalls(rows, unlisted));
    } catch (err) {
      if (attempt < 2) continue;
      logError("recording blocked calls failed", err, { personId, calls: rows.length, unlisted });
      return;
    }
  }
}

/** How long a receiver's group of blocked calls takes more: quiet, and hot (a group within `HOT_MS`). */
const QUIET_WINDOW_MS = 5;
const HOT_WINDOW_MS = 100;
const HOT_MS = 1_000;
/** At most this many calls in one append (the object keeps its newest 1,000 anyway). */
const MAX_APPEND = 1_000;
/** Groups taking calls, by receiver (per isolate), and when each receiver's last group was sent. */
const appending = new Map<number, { rows: BlockedCallRow[]; unlisted: number }>();
const lastSent = new Map<number, number>();
/** Calls counted, not listed, waiting for their receiver's next call into its object (per isolate). */
const unlistedWaiting = new Map<number, number>();
/** How long a count of unlisted calls waits for a group to carry it: one call a second per receiver. */
const MAX_UNLISTED_WAIT_MS = 1_000;

/**
 * The newest 100 blocked calls of a member (docs/decisions.md, "Blocked calls"), from their object, and
 * how many were counted, not listed (past their number's share of the provider's budget).
 */
export async function latestBlockedCalls({ objects }: Deps, personId: number) {
  const { rows, unlisted } = await objects.of(personId).latestBlockedCalls(100);
  return { calls: rows.map((row) => blockedCallView(personId, row)), unlisted };
}
