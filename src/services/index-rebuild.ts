import { sql, type SQL } from "drizzle-orm";
import { KEY_KINDS } from "../domain/key-kinds";
import { INDEX_COMPLETE_KEY } from "../domain/trust-records";
import { COMPANIES_COMPLETE_KEY } from "../domain/company-records";
import type { BackgroundMessage, Chunk } from "../domain/queue-messages";
import { putRebuildKey } from "../db/kv-writes";
import type { Deps } from "./deps";
import { factsOf } from "../db/facts";
import { CONTACTS_COMPLETE_KEY } from "./trust-index/contacts";
import { makeCurrent } from "./trust-index/current";
import { rebuildKeys } from "./trust-index/kinds";
import { markStale } from "./trust-index/stale";

/*
 * The rebuild of the trust index (docs/architecture.md, "The rebuild and its
 * mark"): writes every key from D1 and the person objects, in chunks on the
 * background queue, then marks the index complete. Once marked, a lookup
 * whose keys are absent answers from that absence (unknown caller, unknown
 * receiver) with no D1 statement; before the mark, a miss falls back to D1.
 *
 * Stages, one after the other:
 * - `people`: 100 holders of a secure number a chunk; each one's object is
 *   told D1's facts and writes every key of their number (`rcv:`, `rcvn:`);
 * - `numbers`: 200 keys a chunk of the kinds D1 writes that the registry
 *   puts in this stage (services/trust-index/kinds.ts): the `num:` keys of
 *   numbers that name someone (a confirmed personal phone, a held secure
 *   number, a verified phone of an enabled company), the `eml:` keys of every
 *   person's email and the `lnk:` card of every person, written from D1
 *   through the index work;
 * - `companies`: 200 keys a chunk, the `co:` records (the heartbeat's,
 *   domain/company-records.ts) written through the index work; a numbers
 *   stage of one range starts them in its last chunk;
 * - then the marks: `COMPANIES_COMPLETE_KEY`, `CONTACTS_COMPLETE_KEY`, then `INDEX_COMPLETE_KEY`.
 * Each stage is split into ranges of its keys (`RANGE_ROWS` keys each, at most
 * `MAX_RANGES`), each its own chain of messages, one chunk an invocation (a
 * chunk's work stays that of one message, whatever the deployment's size). Each
 * range keeps where it stands in its own KV record (`rangeKey`, written once per
 * chunk); the range that finishes last starts the next stage. A range whose
 * chain broke (its message lost) is sent again once it has not moved for
 * `STALLED_MS`, by the minute cron or by starting the rebuild again (never a
 * range still moving: its chain would run twice); the marks are set only when
 * every range of the last stage is done.
 */

export const REBUILD_KEY = KEY_KINDS.idx.key("rebuild");
/** The record of range `i` of the running stage. */
export const rangeKey = (i: number) => `${REBUILD_KEY}:range:${i}`;
const CHUNK: Record<Stage, number> = { people: 100, numbers: 200, companies: 200 };
/** Keys a range holds at least (20 chunks of people); more when the stage would need more ranges. */
export const RANGE_ROWS = 2_000;
export const MAX_RANGES = 16;
/** A range that has not moved for this long lost its chain (a chunk takes seconds). */
export const STALLED_MS = 5 * 60_000;

/** The stages in the order they run. */
const STAGES = ["people", "numbers", "companies"] as const;
type Stage = (typeof STAGES)[number];
export type RebuildMessage = Extract<BackgroundMessage, { kind: "rebuild-index" }>;

/** Where the rebuild stands (`GET /internal/trust-index/rebuild`). */
export type RebuildStatus = {
  state: "never" | "running" | "complete";
  /** The index answers from absence (the mark is set). */
  complete: boolean;
  stage: Stage | null;
  people: number;
  numbers: number;
  /** The running stage's ranges: how many, and how many are done. */
  ranges: { total: number; done: number };
  started_at: string | null;
  finished_at: string | null;
};

type Stored = Omit<RebuildStatus, "complete" | "ranges"> & {
  after: number | string;
  /** The running stage's ranges (absent: one, as older code kept it). */
  ranges?: number;
  /** Keys a range holds at least (`RANGE_ROWS`; the tests make it small). */
  range_rows?: number;
};
type Range = { stage: Stage; after: string; until: string | null; done: boolean; count: number; at: number };

async function readStored(deps: Deps): Promise<Stored | null> {
  const value = await deps.kv.get(REBUILD_KEY);
  return value ? (JSON.parse(value) as Stored) : null;
}

/** The running stage's ranges (one KV bulk get); a missing record is a range not started (older code's). */
async function readRanges(deps: Deps, stored: Stored): Promise<(Range | null)[]> {
  const keys = Array.from({ length: stored.ranges ?? 1 }, (_, i) => rangeKey(i));
  const found = await deps.kv.get(keys, "text");
  return keys.map((key) => {
    const value = found.get(key) ?? null;
    const range = value === null ? null : (JSON.parse(value) as Range);
    return range?.stage === stored.stage ? range : null;
  });
}

const countOf = (ranges: (Range | null)[]) => ranges.reduce((sum, range) => sum + (range?.count ?? 0), 0);

export async function rebuildStatus(deps: Deps): Promise<RebuildStatus> {
  const [stored, mark] = await Promise.all([readStored(deps), deps.kv.get(INDEX_COMPLETE_KEY)]);
  if (!stored) {
    const never = { state: "never" as const, stage: null, people: 0, numbers: 0, started_at: null, finished_at: null };
    return { ...never, ranges: { total: 0, done: 0 }, complete: mark !== null };
  }
  const ranges = stored.state === "running" && stored.stage ? await readRanges(deps, stored) : [];
  const { after: _after, ranges: _ranges, range_rows: _rows, ...status } = stored;
  const running = stored.stage === "people" || stored.stage === "numbers" ? { [stored.stage]: countOf(ranges) } : {};
  return {
    ...status,
    people: status.people + (running.people ?? 0),
    numbers: status.numbers + (running.numbers ?? 0),
    ranges: { total: ranges.length, done: ranges.filter((range) => range?.done).length },
    complete: mark !== null,
  };
}

/**
 * The keys of a stage, as column `k`, in order: the people's ids, else the index keys of the kinds
 * the registry puts in the stage (as text, so a message from older code's numeric or bare-number
 * bound restarts its range from the beginning, which only writes keys again).
 */
function sourceOf(stage: Stage): SQL {
  if (stage === "people") return sql`select person_id as k from secure_numbers where person_id is not null`;
  return rebuildKeys(stage);
}
const startOf = (stage: Stage) => (stage === "people" ? "0" : "");
const boundOf = (stage: Stage, value: string) => (stage === "people" ? Number(value) : value);

function messageOf(stage: Stage, range: Pick<Range, "after" | "until">, i: number, total: number): RebuildMessage {
  if (total === 1) return { kind: "rebuild-index", stage, after: range.after };
  return { kind: "rebuild-index", stage, after: range.after, range: i, ...(range.until ? { until: range.until } : {}) };
}

/**
 * Starts `stage`: splits its keys into ranges (2 D1 statements), writes each range's record and the
 * rebuild's, and answers the message of each range.
 */
async function startStage(deps: Deps, stored: Stored, stage: Stage, now: Date): Promise<RebuildMessage[]> {
  const source = sourceOf(stage);
  const [counted] = await deps.db.all<{ n: number }>(sql`select count(*) as n from (${source})`);
  const n = counted?.n ?? 0;
  const per = Math.max(stored.range_rows ?? RANGE_ROWS, Math.ceil(n / MAX_RANGES));
  const cuts =
    n > per
      ? (
          await deps.db.all<{ k: string | number }>(sql`select k from (select k, row_number() over (order by k) as rn
            from (${source})) where rn % ${per} = 0 and rn < ${n} order by k`)
        ).map((row) => String(row.k))
      : [];
  const ranges: Range[] = [...cuts, null].map((until, i) => ({
    stage,
    after: i === 0 ? startOf(stage) : cuts[i - 1]!,
    until,
    done: false,
    count: 0,
    at: now.getTime(),
  }));
  await Promise.all(ranges.map((range, i) => putRebuildKey(deps.kv, rangeKey(i), JSON.stringify(range))));
  await save(deps, { ...stored, state: "running", stage, ranges: ranges.length, after: startOf(stage) });
  return ranges.map((range, i) => messageOf(stage, range, i, ranges.length));
}

/**
 * Starts the rebuild (or resumes it where it stands, when one is running: every range not done, or
 * the next stage when all are): answers the messages, which the caller sends or runs.
 */
export async function startRebuildRanges(
  deps: Deps,
  now: Date,
  { rangeRows }: { rangeRows?: number } = {},
): Promise<RebuildMessage[]> {
  const stored = await readStored(deps);
  if (stored?.state === "running" && stored.stage) return resume(deps, stored, now, () => true);
  const fresh: Stored = {
    state: "running",
    stage: "people",
    people: 0,
    numbers: 0,
    started_at: now.toISOString(),
    finished_at: null,
    after: 0,
    ...(rangeRows ? { range_rows: rangeRows } : {}),
  };
  return startStage(deps, fresh, "people", now);
}

/** The first message of `startRebuildRanges` (a deployment of one range has one). */
export async function startRebuild(deps: Deps, now: Date): Promise<RebuildMessage> {
  return (await startRebuildRanges(deps, now))[0]!;
}

/** The messages that continue a running rebuild: its ranges not done that `again` picks, or the next stage. */
async function resume(deps: Deps, stored: Stored, now: Date, again: (range: Range) => boolean) {
  const ranges = await readRanges(deps, stored);
  const stage = stored.stage!;
  if (ranges.every((range) => range?.done)) return advance(deps, stored, ranges, now);
  return ranges.flatMap((range, i) => {
    // No record: a stage older code started (its one range stands at `after`).
    const current = range ?? { stage, after: String(stored.after), until: null, done: false, count: 0, at: 0 };
    return !current.done && again(current) ? [messageOf(stage, current, i, ranges.length)] : [];
  });
}

/** Every range of the stage is done: the next stage starts (its messages), or the marks are set. */
async function advance(deps: Deps, stored: Stored, ranges: (Range | null)[], now: Date): Promise<RebuildMessage[]> {
  const stage = stored.stage!;
  const totals = { ...stored, ...(stage === "companies" ? {} : { [stage]: stored[stage] + countOf(ranges) }) };
  if (stage === "companies") {
    await putRebuildKey(deps.kv, COMPANIES_COMPLETE_KEY, JSON.stringify({ at: now.toISOString() }));
    await putRebuildKey(deps.kv, CONTACTS_COMPLETE_KEY, JSON.stringify({ at: now.toISOString() }));
    await putRebuildKey(deps.kv, INDEX_COMPLETE_KEY, JSON.stringify({ at: now.toISOString() }));
    await save(deps, { ...totals, state: "complete", stage: null, after: 0, finished_at: now.toISOString() });
    return [];
  }
  return startStage(deps, totals, stage === "people" ? "numbers" : "companies", now);
}

/** A range whose chain broke: it has not moved for `STALLED_MS` (a chunk takes seconds). */
const stalledAt = (now: Date) => (range: Range) => range.at <= now.getTime() - STALLED_MS;

/**
 * Starts the rebuild on the background queue (the operator's command), or, while one runs, sends
 * again only the ranges that stalled (or the next stage when all are done), as the minute cron
 * does: a range still moving has its chain on the queue, and a second chain would run it twice.
 */
export async function requestRebuild(deps: Deps, now: Date): Promise<void> {
  const stored = await readStored(deps);
  if (stored?.state === "running" && stored.stage) await sendAll(deps, await resume(deps, stored, now, stalledAt(now)));
  else await sendAll(deps, await startRebuildRanges(deps, now));
}

/** At most `MAX_RANGES` messages, one send each. */
const sendAll = async (deps: Deps, messages: RebuildMessage[]) => {
  for (const message of messages) await deps.backgroundQueue.send(message);
};

/**
 * The minute cron's check: an index that was never built (a new deployment), or one a finished
 * rebuild of older code left without the marks this code reads (no `COMPANIES_COMPLETE_KEY` or
 * `CONTACTS_COMPLETE_KEY`: a deployment upgraded to the heartbeat's company records or to contacts
 * linking through the index), starts its rebuild by itself; a running
 * one gets every range that has not moved for `STALLED_MS` sent again (its chain broke), or its next
 * stage when all its ranges are done. One KV bulk get a minute otherwise (two while one runs).
 */
export async function rebuildIfNever(deps: Deps, now: Date): Promise<boolean> {
  const found = await deps.kv.get([REBUILD_KEY, COMPANIES_COMPLETE_KEY, CONTACTS_COMPLETE_KEY], "text");
  const record = found.get(REBUILD_KEY) ?? null;
  const stored = record === null ? null : (JSON.parse(record) as Stored);
  if (stored?.state === "running" && stored.stage) {
    const stalled = await resume(deps, stored, now, stalledAt(now));
    await sendAll(deps, stalled);
    return stalled.length > 0;
  }
  const marked = [COMPANIES_COMPLETE_KEY, CONTACTS_COMPLETE_KEY].every((key) => (found.get(key) ?? null) !== null);
  if (stored !== null && marked) return false;
  await requestRebuild(deps, now);
  return true;
}

/** One chunk of one range of the rebuild; the message that continues it, if any. */
export async function rebuildChunk(deps: Deps, body: RebuildMessage, now: Date): Promise<Chunk> {
  const stored: Stored = (await readStored(deps)) ?? {
    state: "running",
    stage: body.stage,
    people: 0,
    numbers: 0,
    started_at: now.toISOString(),
    finished_at: null,
    after: body.after,
  };
  const stage = body.stage;
  // A copy of a message whose stage is over (a queue's second delivery, a chain sent again that was only
  // slow): its keys were written, and its range's record now belongs to a later stage's range.
  if (stored.state === "running" && stored.stage && STAGES.indexOf(stage) < STAGES.indexOf(stored.stage)) {
    return { done: { stage, range: body.range ?? 0, over: true } };
  }
  const i = body.range ?? 0;
  const until = body.until ?? null;
  const rows = await deps.db.all<{ k: string | number }>(sql`select k from (${sourceOf(stage)})
    where k > ${boundOf(stage, body.after)} ${until === null ? sql`` : sql`and k <= ${boundOf(stage, until)}`}
    order by k limit ${CHUNK[stage]}`);
  const keys = rows.map((row) => String(row.k));
  await writeKeys(deps, stage, keys, now);
  const previous = (await readRanges(deps, stored))[i];
  const done = keys.length < CHUNK[stage] || (until !== null && keys.at(-1) === until);
  const range: Range = {
    stage,
    after: keys.at(-1) ?? body.after,
    until,
    done,
    count: (previous?.count ?? 0) + keys.length,
    at: now.getTime(),
  };
  await putRebuildKey(deps.kv, rangeKey(i), JSON.stringify(range));
  const written = { stage, range: i, [stage]: keys.length };
  if (!done) return { done: written, next: messageOf(stage, range, i, stored.ranges ?? 1) };
  // The range is done: the last one of the stage starts the next (or the marks).
  const ranges = (await readRanges(deps, stored)).map((other, j) => (j === i ? range : other));
  if (stored.stage !== stage || !ranges.every((other) => other?.done)) return { done: written };
  const next = await advance(deps, stored, ranges, now);
  // A numbers stage of one range runs the companies' first chunk here (a small deployment ends in it).
  if (stage === "numbers" && next.length === 1) {
    const companies = await rebuildChunk(deps, next[0]!, now);
    return { ...companies, done: { ...written, ...companies.done } };
  }
  const [first, ...rest] = next;
  await sendAll(deps, rest);
  return { done: { ...written, ...(next.length === 0 ? { complete: true } : {}) }, ...(first ? { next: first } : {}) };
}

/** Writes the keys of a chunk: each person's object its own; the other stages' keys through the index work. */
async function writeKeys(deps: Deps, stage: Stage, keys: string[], now: Date) {
  if (keys.length === 0) return;
  if (stage === "people") {
    // Each object writes its own keys (its own KV operations); a failed write is retried by its alarm.
    const facts = await factsOf(deps.db, keys.map(Number));
    await Promise.all(facts.map((fact) => deps.objects.write(fact.personId, (person) => person.rewriteKeys(fact))));
    return;
  }
  const indexKeys = keys;
  await deps.db.batch([markStale(deps.db, indexKeys, now)]);
  // Put whatever KV is thought to hold (a key written less than a second ago once that second has passed,
  // before the mark); a refused key stays due for the index sweep.
  await makeCurrent(deps, { keys: indexKeys, now, force: true, waitDeferred: stage === "numbers" });
}

const save = (deps: Deps, stored: Stored) => putRebuildKey(deps.kv, REBUILD_KEY, JSON.stringify(stored));

/** Runs a whole rebuild in this invocation: for the demo world and the tests (a handful of people). */
export async function rebuildNow(deps: Deps, now = new Date(), options: { rangeRows?: number } = {}): Promise<void> {
  const queue: RebuildMessage[] = await startRebuildRanges(deps, now, options);
  // Messages the chunks send (other ranges, the next stage's) are run here too.
  const send = async (message: BackgroundMessage) => void queue.push(message as RebuildMessage);
  const local: Deps = {
    ...deps,
    backgroundQueue: { ...deps.backgroundQueue, send } as unknown as Deps["backgroundQueue"],
  };
  for (let chunks = 0; queue.length > 0 && chunks < 500; chunks++) {
    const next = (await rebuildChunk(local, queue.shift()!, now)).next as RebuildMessage | undefined;
    if (next) queue.push(next);
  }
}
