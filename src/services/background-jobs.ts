import { describeZodError, loggableError } from "../lib/errors";
import { backgroundMessage, type BackgroundMessage, type Chunk } from "../domain/queue-messages";
import { ScanEventBatch } from "../domain/scan-events";
import { forwardCompanyEvents } from "./company-events";
import { moveCompanyScansChunk } from "./company-scan-moves";
import { pruneContactTombstones } from "./contacts";
import { claimDeadLetter, deadLetterDue, finishDeadLetter } from "./dead-letters";
import { submitRemovalRequests } from "./exposures";
import { purgeExpiredEphemeral } from "./memberships";
import type { Deps } from "./deps";
import { rebuildChunk } from "./index-rebuild";
import { sendDueInvitations } from "./invitations";
import { movePeopleChunk, movePersonChunk } from "./person-moves";
import { eraseGonePersons } from "./person-erasures";
import { forgetInObjects } from "./company-forgets";
import { pruneExpired } from "./retention";
import { applyScanEvents } from "./scans";
import { runPushJob } from "./push";
import { makeCurrent } from "./trust-index/current";
import { handOverFinished, sweepOutbox } from "./webhook-delivery";

/**
 * The background jobs, one bounded chunk per call (docs/architecture.md,
 * "Background work"). The crons run a job's first chunk; a chunk that was
 * full names the message that continues it (`next`), which the caller sends
 * on the `background` queue, whose consumer runs one message per invocation.
 * So every job drains at the pace of back-to-back invocations, each inside
 * the invocation's limits, and stops by itself when a chunk comes back short.
 */

/**
 * Keys per index-sweep chunk: one KV put each at most (an unchanged value is
 * not put) plus 15 D1 statements, half of an invocation's 1,000 operations.
 */
export const INDEX_SWEEP_CHUNK = 500;
/** History rows the outbox sweep re-enqueues per chunk: 2 D1 statements and 5 queue sends. */
export const OUTBOX_SWEEP_CHUNK = 500;

/**
 * One chunk of the index sweep: the oldest due `index_work` rows. Continues
 * while the chunk was full and KV took most of it; when KV refuses, the rows
 * wait out their backoff and the minute sweep tries again.
 */
export async function sweepIndexChunk(deps: Deps, now: Date, limit = INDEX_SWEEP_CHUNK): Promise<Chunk> {
  const { applied, unchanged, failed } = await makeCurrent(deps, { now, limit });
  const claimed = applied.length + failed.length;
  const more = claimed >= limit && failed.length * 2 < claimed;
  return {
    done: { applied: applied.length, unchanged: unchanged.length, failed: failed.length },
    ...(more ? { next: { kind: "reindex" } as const } : {}),
  };
}

/** One chunk of a background job. Throws when the chunk failed (the caller retries it). */
export async function runBackgroundJob(deps: Deps, body: BackgroundMessage, now: Date): Promise<Chunk> {
  const continues = (more: boolean, next: BackgroundMessage) => (more ? { next } : {});
  switch (body.kind) {
    case "reindex": {
      if (!body.keys) return sweepIndexChunk(deps, now);
      const { applied, unchanged, failed, deferred } = await makeCurrent(deps, { keys: body.keys, now });
      // KV refused some keys, or they were written less than a second ago: try again shortly (their rows stay
      // due for the sweep too).
      return {
        done: { applied: applied.length, unchanged: unchanged.length, failed: failed.length },
        retry: failed.length + deferred.length > 0,
      };
    }
    case "purge": {
      const { removed, more } = await purgeExpiredEphemeral(deps, now);
      return { done: { removed: removed.length }, ...continues(more, body) };
    }
    case "retention": {
      const { pruned, more } = await pruneExpired(deps, now);
      return { done: { pruned }, ...continues(more, body) };
    }
    case "tombstones": {
      const { pruned, more } = await pruneContactTombstones(deps.db, now);
      return { done: { pruned }, ...continues(more, body) };
    }
    case "removals": {
      const { moved, more } = await submitRemovalRequests(deps, now);
      return { done: { moved }, ...continues(more, body) };
    }
    case "outbox": {
      const requeued = await sweepOutbox(deps, now, OUTBOX_SWEEP_CHUNK);
      return { done: { requeued }, ...continues(requeued >= OUTBOX_SWEEP_CHUNK, body) };
    }
    case "redrive":
      return redriveDeadLetter(deps, now);
    case "move-people":
      return movePeopleChunk(deps, body.after, now);
    case "move-person":
      return movePersonChunk(deps, body, now);
    case "erase-persons": {
      const { erased, more } = await eraseGonePersons(deps, undefined, now);
      return { done: { erased }, ...continues(more, body) };
    }
    case "forget-people": {
      const { forgotten, more } = await forgetInObjects(deps, undefined, now);
      return { done: { forgotten }, ...continues(more, body) };
    }
    case "hand-over-history": {
      const { handed, full } = await handOverFinished(deps);
      return { done: { handed }, ...continues(full, body) };
    }
    case "move-company-scans":
      return moveCompanyScansChunk(deps, body);
    case "company-events": {
      const { forwarded, more } = await forwardCompanyEvents(deps, body.companyId);
      return { done: { companyId: body.companyId, forwarded }, ...continues(more, body) };
    }
    case "rebuild-index":
      return rebuildChunk(deps, body, now);
    case "push":
      return runPushJob(deps, body, now);
    case "invitations": {
      const { more, ...done } = await sendDueInvitations(deps, now);
      return { done, ...continues(more, body) };
    }
  }
}

/**
 * Retries the oldest due dead letter in this invocation, as its own queue's
 * consumer would have run it: a scan-event batch is applied (idempotent), a
 * background chunk is run (and continued). Done: the letter goes; failed: it
 * stays, with its error, due again after a longer delay. Continues while
 * more letters are due. A letter of a queue this cannot run stays recorded
 * for the operator (`npm run admin -- status`).
 */
export async function redriveDeadLetter(deps: Deps, now: Date): Promise<Chunk> {
  const letter = await claimDeadLetter(deps, now);
  if (!letter) return { done: { redriven: null } };
  let error: string | null = null;
  try {
    await runDeadLetter(deps, letter.queue, letter.body, now);
  } catch (err) {
    const { name, message } = loggableError(err);
    error = `${name}: ${message}`;
  }
  await finishDeadLetter(deps, letter.id, error);
  const more = await deadLetterDue(deps, now);
  return {
    done: { redriven: letter.id, queue: letter.queue, attempts: letter.attempts, ok: error === null, error },
    ...(more ? { next: { kind: "redrive" } as const } : {}),
  };
}

async function runDeadLetter(deps: Deps, queue: string, body: unknown, now: Date) {
  if (queue === "scan-events") {
    const parsed = ScanEventBatch.safeParse(body);
    if (!parsed.success) throw new Error(describeZodError(parsed.error, "message"));
    await applyScanEvents(deps, parsed.data);
    return;
  }
  if (queue === "background") {
    const parsed = backgroundMessage.safeParse(body);
    if (!parsed.success) throw new Error(describeZodError(parsed.error, "message"));
    const chunk = await runBackgroundJob(deps, parsed.data, now);
    if (chunk.retry) throw new Error("some index work was refused again; its rows stay due");
    if (chunk.next) await deps.backgroundQueue.send(chunk.next);
    return;
  }
  throw new Error(`no redrive for messages of queue ${queue}`);
}
