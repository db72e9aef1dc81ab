import { sql } from "drizzle-orm";
import { INDEX_COMPLETE_KEY } from "../domain/trust-records";
import { companyKey, COMPANIES_COMPLETE_KEY } from "../domain/company-records";
import type { BackgroundMessage } from "../domain/queue-messages";
import type { Chunk } from "./background-jobs";
import type { Deps } from "./deps";
import { putRebuildKey } from "../db/kv-writes";
import { applyIndexWork, factsOf, workForKeys } from "./trust-index";

/*
 * The rebuild of the trust index (docs/architecture.md, "The rebuild and its
 * mark"): writes every key from D1 and the person objects, in chunks on the
 * background queue, then marks the index complete. Once marked, a lookup
 * whose keys are absent answers from that absence (unknown caller, unknown
 * receiver) with no D1 statement; before the mark, a miss falls back to D1.
 *
 * Stages, each chunk one message, each resumable from where it stands:
 * - `people`: 100 holders of a secure number at a time; each one's object is
 *   told D1's facts and writes every key of their number (`rcv:`, `rcvn:`);
 * - `numbers`: 200 numbers that name someone (a confirmed personal phone, a
 *   held secure number, a verified phone of an enabled company) at a time,
 *   their `num:` keys written from D1 through the index work;
 * - `companies`: 200 companies at a time, their `co:` records (the
 *   heartbeat's, domain/company-records.ts) written from D1 through the index
 *   work; the last numbers chunk starts them, so a small deployment ends there;
 * - then the marks: `COMPANIES_COMPLETE_KEY`, then `INDEX_COMPLETE_KEY`.
 * Where the rebuild stands is one KV record (`REBUILD_KEY`), written once per
 * chunk; starting again while it runs resumes from there.
 */

export const REBUILD_KEY = "idx:rebuild";
const PEOPLE_CHUNK = 100;
const NUMBERS_CHUNK = 200;
const COMPANIES_CHUNK = 200;

type Stage = "people" | "numbers" | "companies";
export type RebuildMessage = Extract<BackgroundMessage, { kind: "rebuild-index" }>;

/** Where the rebuild stands (`GET /internal/trust-index/rebuild`). */
export type RebuildStatus = {
  state: "never" | "running" | "complete";
  /** The index answers from absence (the mark is set). */
  complete: boolean;
  stage: Stage | null;
  people: number;
  numbers: number;
  started_at: string | null;
  finished_at: string | null;
};

type Stored = Omit<RebuildStatus, "complete"> & { after: number | string };

async function readStored(deps: Pick<Deps, "kv">): Promise<Stored | null> {
  const value = await deps.kv.get(REBUILD_KEY);
  return value ? (JSON.parse(value) as Stored) : null;
}

export async function rebuildStatus(deps: Pick<Deps, "kv">): Promise<RebuildStatus> {
  const [stored, mark] = await Promise.all([readStored(deps), deps.kv.get(INDEX_COMPLETE_KEY)]);
  const { after: _after, ...status } = stored ?? {
    state: "never" as const,
    stage: null,
    people: 0,
    numbers: 0,
    started_at: null,
    finished_at: null,
    after: 0,
  };
  return { ...status, complete: mark !== null };
}

/**
 * Starts the rebuild (or resumes it where it stands, when one is running):
 * answers the message of its next chunk, which the caller sends or runs.
 */
export async function startRebuild(deps: Pick<Deps, "kv">, now: Date): Promise<RebuildMessage> {
  const stored = await readStored(deps);
  if (stored?.state === "running" && stored.stage) {
    return { kind: "rebuild-index", stage: stored.stage, after: String(stored.after) };
  }
  const fresh: Stored = {
    state: "running",
    stage: "people",
    people: 0,
    numbers: 0,
    started_at: now.toISOString(),
    finished_at: null,
    after: 0,
  };
  await putRebuildKey(deps.kv, REBUILD_KEY, JSON.stringify(fresh));
  return { kind: "rebuild-index", stage: "people", after: "0" };
}

/** Starts (or resumes) the rebuild on the background queue (the operator's command). */
export async function requestRebuild(deps: Deps, now: Date): Promise<void> {
  await deps.backgroundQueue.send(await startRebuild(deps, now));
}

/**
 * The minute cron's check: an index that was never built (a new deployment), or one a finished
 * rebuild of older code left without the marks this code reads (no `COMPANIES_COMPLETE_KEY`: a
 * deployment upgraded to the heartbeat's company records), starts its rebuild by itself; one KV
 * bulk get a minute otherwise. A running rebuild is left to finish.
 */
export async function rebuildIfNever(deps: Deps, now: Date): Promise<boolean> {
  // One bulk get (one KV operation) of the rebuild's record and the companies mark.
  const found = await deps.kv.get([REBUILD_KEY, COMPANIES_COMPLETE_KEY], "text");
  const record = found.get(REBUILD_KEY) ?? null;
  const stored = record === null ? null : (JSON.parse(record) as Stored);
  if (stored !== null && (stored.state === "running" || (found.get(COMPANIES_COMPLETE_KEY) ?? null) !== null)) {
    return false;
  }
  await requestRebuild(deps, now);
  return true;
}

/** One chunk of the rebuild; the message that continues it, if any. */
export async function rebuildChunk(deps: Deps, body: RebuildMessage, now: Date): Promise<Chunk> {
  const progress: Stored = (await readStored(deps)) ?? {
    state: "running",
    stage: body.stage,
    people: 0,
    numbers: 0,
    started_at: now.toISOString(),
    finished_at: null,
    after: body.after,
  };
  if (body.stage === "people") {
    const holders = await deps.db.all<{ id: number }>(sql`
      select person_id as id from secure_numbers where person_id is not null and person_id > ${Number(body.after)}
      order by person_id limit ${PEOPLE_CHUNK}`);
    const ids = holders.map((row) => row.id);
    if (ids.length > 0) {
      // Each object writes its own keys (its own KV operations); a failed write is retried by its alarm.
      await Promise.all(
        (await factsOf(deps.db, ids)).map((facts) => deps.objects.of(facts.personId).rewriteKeys(facts)),
      );
    }
    const full = ids.length >= PEOPLE_CHUNK;
    const next: RebuildMessage = full
      ? { kind: "rebuild-index", stage: "people", after: String(ids.at(-1)) }
      : { kind: "rebuild-index", stage: "numbers", after: "" };
    await save(deps, { ...progress, stage: next.stage, after: next.after, people: progress.people + ids.length });
    return { done: { stage: "people", people: ids.length }, next };
  }
  if (body.stage === "companies") return companiesChunk(deps, progress, Number(body.after), now);
  const numbers = await deps.db.all<{ e164: string }>(sql`
    select e164 from (
      select e164 from person_phones where confirmed = 1
      union select e164 from secure_numbers where person_id is not null
      union select p.e164 from company_phones p join companies c on c.id = p.company_id
        where p.status = 'verified' and c.status = 'enabled')
    where e164 > ${body.after} order by e164 limit ${NUMBERS_CHUNK}`);
  const keys = numbers.map((row) => `num:${row.e164}`);
  if (keys.length > 0) {
    await deps.db.batch([workForKeys(deps.db, keys, now)]);
    // Put whatever KV is thought to hold (a key written less than a second ago once that second has
    // passed, before the mark); a refused key stays due for the index sweep.
    await applyIndexWork(deps, { keys, now, force: true, waitDeferred: true });
  }
  if (keys.length >= NUMBERS_CHUNK) {
    const after = numbers.at(-1)!.e164;
    await save(deps, { ...progress, stage: "numbers", after, numbers: progress.numbers + keys.length });
    return {
      done: { stage: "numbers", numbers: keys.length },
      next: { kind: "rebuild-index", stage: "numbers", after },
    };
  }
  // The numbers are done: the companies start in this chunk (a small deployment finishes here).
  const companies = await companiesChunk(deps, { ...progress, numbers: progress.numbers + keys.length }, 0, now);
  return { ...companies, done: { stage: "numbers", numbers: keys.length, ...companies.done } };
}

/** The `co:` records of the next companies after `after`; the marks once none is left. */
async function companiesChunk(deps: Deps, progress: Stored, after: number, now: Date): Promise<Chunk> {
  const rows = await deps.db.all<{ id: number }>(
    sql`select id from companies where id > ${after} order by id limit ${COMPANIES_CHUNK}`,
  );
  const keys = rows.map((row) => companyKey(row.id));
  if (keys.length > 0) {
    await deps.db.batch([workForKeys(deps.db, keys, now)]);
    await applyIndexWork(deps, { keys, now, force: true });
  }
  if (keys.length >= COMPANIES_CHUNK) {
    const next: RebuildMessage = { kind: "rebuild-index", stage: "companies", after: String(rows.at(-1)!.id) };
    await save(deps, { ...progress, stage: "companies", after: next.after });
    return { done: { stage: "companies", companies: keys.length }, next };
  }
  await putRebuildKey(deps.kv, COMPANIES_COMPLETE_KEY, JSON.stringify({ at: now.toISOString() }));
  await putRebuildKey(deps.kv, INDEX_COMPLETE_KEY, JSON.stringify({ at: now.toISOString() }));
  await save(deps, { ...progress, state: "complete", stage: null, after: 0, finished_at: now.toISOString() });
  return { done: { stage: "companies", companies: keys.length, complete: true } };
}

const save = (deps: Pick<Deps, "kv">, stored: Stored) => putRebuildKey(deps.kv, REBUILD_KEY, JSON.stringify(stored));

/** Runs a whole rebuild in this invocation: for the demo world and the tests (a handful of people). */
export async function rebuildNow(deps: Deps, now = new Date()): Promise<void> {
  let message: RebuildMessage | undefined = await startRebuild(deps, now);
  for (let chunks = 0; message && chunks < 50; chunks++)
    message = (await rebuildChunk(deps, message, now)).next as RebuildMessage | undefined;
}
