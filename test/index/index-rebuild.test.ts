import { createExecutionContext, createScheduledController, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { INDEX_COMPLETE_KEY } from "../../src/domain/trust-records";
import { COMPANIES_COMPLETE_KEY } from "../../src/domain/company-records";
import { CONTACTS_COMPLETE_KEY } from "../../src/services/trust-index/contacts";
import {
  rebuildChunk,
  rebuildNow,
  rebuildStatus,
  REBUILD_KEY,
  STALLED_MS,
  startRebuild,
  startRebuildRanges,
  type RebuildMessage,
} from "../../src/services/index-rebuild";
import { createDeps } from "../../src/services/create-deps";
import type { BackgroundMessage } from "../../src/domain/queue-messages";
import worker from "../../src/index";
import { as, call, countD1, DEMO, indexKeysWritten, insertToken, secureNumberOf } from "../helpers";

/*
 * The complete trust index (docs/architecture.md, "The rebuild and its
 * mark"): once the rebuild has marked it, a lookup whose keys are absent is
 * answered from that absence, with no D1 statement and no write.
 */

const ADMIN = `sk_test_index_admin_${crypto.randomUUID().replaceAll("-", "")}`;
let ALICE = "";

beforeAll(async () => {
  await insertToken(ADMIN, { serviceName: "operator", scopes: ["platform:admin"] });
  ALICE = (await secureNumberOf("alice")).e164;
});

afterEach(() => {
  vi.restoreAllMocks();
});

const lookup = (number: string, inbound: string) =>
  as("telephony").get(`/apps/buzz/trust-lookup?${new URLSearchParams({ number, inbound })}`);

describe("after the mark, the ringing path makes no D1 statement", () => {
  it("100 lookups from 100 never-seen callers: 0 D1 statements and no KV write", async () => {
    expect((await lookup(ALICE, "+16505550100")).status).toBe(200); // the token is verified once
    const puts = vi.spyOn(env.TRUST_INDEX, "put");
    const d1 = countD1();
    const answers = await Promise.all(
      Array.from({ length: 100 }, (_, i) => lookup(ALICE, `+1650555${String(2000 + i)}`).then((r) => r.json())),
    );
    expect(answers.every((a) => (a as { trusted: boolean; user_id: number }).user_id === DEMO.people.alice)).toBe(true);
    expect(answers.every((a) => (a as { trusted: boolean }).trusted === false)).toBe(true);
    expect(d1.statements).toBe(0);
    expect(puts.mock.calls.filter(([key]) => String(key).startsWith("num:") || String(key).startsWith("rcv"))).toEqual(
      [],
    );
  });

  it("20 concurrent lookups to a member whose key is absent: answered as unknown, 0 D1 statements, nothing written", async () => {
    const member = "+12025550999"; // nobody's: its key is absent, as a member's would be if lost
    expect((await lookup(ALICE, "+16505550101")).status).toBe(200);
    const puts = vi.spyOn(env.TRUST_INDEX, "put");
    const d1 = countD1();
    const answers = await Promise.all(Array.from({ length: 20 }, () => lookup(member, DEMO.acmePhone)));
    for (const answer of answers) expect(await answer.json()).toMatchObject({ trusted: false, user_id: 0 });
    expect(d1.statements).toBe(0);
    expect(puts.mock.calls).toEqual([]);
  });
});

/** One run of the minute cron, as the runtime makes it. */
async function tick() {
  const ctx = createExecutionContext();
  await worker.scheduled!(createScheduledController({ cron: "* * * * *", scheduledTime: Date.now() }), env, ctx);
  await waitOnExecutionContext(ctx);
}

/** The messages sent on the background queue from now on (not delivered). */
function backgroundSends(): BackgroundMessage[] {
  const sent: BackgroundMessage[] = [];
  vi.spyOn(env.BACKGROUND_QUEUE, "send").mockImplementation(
    (async (body: BackgroundMessage) => void sent.push(body)) as never,
  );
  return sent;
}

describe("the rebuild", () => {
  it("writes every key and then the mark; interrupted, it resumes where it stood", async () => {
    const deps = createDeps(env);
    // A deployment whose index was lost: no key, no mark, no record of a rebuild.
    let cursor: string | undefined;
    do {
      const page = await env.TRUST_INDEX.list({ cursor });
      await Promise.all(page.keys.filter((k) => !k.name.startsWith("tok:")).map((k) => env.TRUST_INDEX.delete(k.name)));
      cursor = page.list_complete ? undefined : page.cursor;
    } while (cursor);

    const now = new Date();
    const first = await startRebuild(deps, now);
    expect(first).toEqual({ kind: "rebuild-index", stage: "people", after: "0" });
    const afterPeople = await rebuildChunk(deps, first, now);
    expect(afterPeople.next).toMatchObject({ stage: "numbers" });
    // Alice holds a secure number: her object wrote her receiver record (once a second had passed since
    // its last write, the test setup's).
    await indexKeysWritten(DEMO.people.alice);
    expect(await env.TRUST_INDEX.get(`rcv:${ALICE}`)).not.toBeNull();
    expect(await env.TRUST_INDEX.get(INDEX_COMPLETE_KEY)).toBeNull();

    // The worker stopped here (its continuation lost). Starting again resumes at the numbers.
    const resumed = await startRebuild(deps, now);
    expect(resumed).toEqual(afterPeople.next);
    const last = await rebuildChunk(deps, resumed, now);
    expect(last.next).toBeUndefined();
    expect(await env.TRUST_INDEX.get(INDEX_COMPLETE_KEY)).not.toBeNull();
    expect(JSON.parse((await env.TRUST_INDEX.get(`num:${DEMO.acmePhone}`))!)).toEqual({ p: [], c: [1] });
    expect(JSON.parse((await env.TRUST_INDEX.get(`num:${DEMO.bobPhone}`))!)).toMatchObject({
      p: [DEMO.people.bob],
    });
    expect(JSON.parse((await env.TRUST_INDEX.get(REBUILD_KEY))!)).toMatchObject({ state: "complete", stage: null });
    // Contacts link through the same index: every email's owner (`eml:`), every person's card (`lnk:`), their mark.
    expect(JSON.parse((await env.TRUST_INDEX.get("eml:bob@acme.example"))!)).toEqual({ p: DEMO.people.bob });
    expect(JSON.parse((await env.TRUST_INDEX.get(`lnk:${DEMO.people.bob}`))!)).toMatchObject({ c: [1] });
    expect(await env.TRUST_INDEX.get(CONTACTS_COMPLETE_KEY)).not.toBeNull();
    // Lookups answer as before.
    expect(await (await lookup(ALICE, DEMO.acmePhone)).json()).toMatchObject({
      trusted: true,
      user_id: DEMO.people.alice,
    });
  });

  it("POST /internal/trust-index/rebuild starts it on the background queue; GET tells where it stands (operator only)", async () => {
    const sent = backgroundSends();
    await env.TRUST_INDEX.delete(REBUILD_KEY);
    const started = await call("/internal/trust-index/rebuild", { method: "POST", token: ADMIN });
    expect(started.status).toBe(202);
    expect(await started.json()).toMatchObject({ state: "running", stage: "people" });
    expect(sent).toEqual([{ kind: "rebuild-index", stage: "people", after: "0" }]);
    const status = await call("/internal/trust-index/rebuild", { token: ADMIN });
    expect(status.status).toBe(200);
    expect((await as("alice").send("POST", "/internal/trust-index/rebuild")).status).toBe(403);
  });

  it("the minute cron starts a rebuild on a deployment that never had one, and not again", async () => {
    const sent = backgroundSends();
    await env.TRUST_INDEX.delete(REBUILD_KEY);
    await tick();
    expect(sent.filter((m) => m.kind === "rebuild-index")).toHaveLength(1);
    await tick();
    expect(sent.filter((m) => m.kind === "rebuild-index")).toHaveLength(1);
  });

  it("the minute cron rebuilds an index older code finished without the company records, once", async () => {
    const sent = backgroundSends();
    const finished = {
      state: "complete",
      stage: null,
      people: 2,
      numbers: 4,
      started_at: new Date(Date.now() - 86_400_000).toISOString(),
      finished_at: new Date(Date.now() - 86_300_000).toISOString(),
      after: 0,
    };
    await env.TRUST_INDEX.put(REBUILD_KEY, JSON.stringify(finished));
    await env.TRUST_INDEX.delete(COMPANIES_COMPLETE_KEY);
    await tick();
    const rebuilds = () => sent.filter((m) => m.kind === "rebuild-index");
    expect(rebuilds()).toEqual([{ kind: "rebuild-index", stage: "people", after: "0" }]);
    await tick(); // running: left to finish
    expect(rebuilds()).toHaveLength(1);
    // Run to the end as the queue would: the marks are set, and the cron asks for nothing more.
    vi.restoreAllMocks();
    await rebuildNow(createDeps(env));
    expect(await env.TRUST_INDEX.get(COMPANIES_COMPLETE_KEY)).not.toBeNull();
  });

  /** A fresh rebuild of one key a range, run through its people: answers the numbers stage's messages. */
  async function numbersRanges(deps: ReturnType<typeof createDeps>, sent: BackgroundMessage[], now: Date) {
    await Promise.all(
      [REBUILD_KEY, INDEX_COMPLETE_KEY, COMPANIES_COMPLETE_KEY].map((key) => env.TRUST_INDEX.delete(key)),
    );
    const people = await startRebuildRanges(deps, now, { rangeRows: 1 });
    let next: RebuildMessage | undefined;
    for (const message of people) next = ((await rebuildChunk(deps, message, now)).next as RebuildMessage) ?? next;
    const numbers = [next!, ...(sent.splice(0) as RebuildMessage[])];
    expect(numbers.map((message) => [message.stage, message.range])).toEqual(numbers.map((_, i) => ["numbers", i]));
    return { people: people.length, numbers };
  }

  it("works in parallel ranges, reports each stage's progress, and marks the index only when every range is done", async () => {
    const sent = backgroundSends();
    const deps = createDeps(env);
    const now = new Date();
    // One key a range: every number is a range of its own, each its own chain of messages.
    const { people, numbers } = await numbersRanges(deps, sent, now);
    expect(numbers.length).toBeGreaterThanOrEqual(2);
    expect(await rebuildStatus(deps)).toMatchObject({
      state: "running",
      stage: "numbers",
      people,
      ranges: { total: numbers.length, done: 0 },
    });
    // The ranges finish in any order; the stage moves on only with the last.
    const [first, ...others] = numbers;
    for (const message of others.reverse()) expect((await rebuildChunk(deps, message, now)).next).toBeUndefined();
    expect(await rebuildStatus(deps)).toMatchObject({
      stage: "numbers",
      ranges: { total: numbers.length, done: numbers.length - 1 },
    });
    expect(await env.TRUST_INDEX.get(INDEX_COMPLETE_KEY)).toBeNull();
    const last = await rebuildChunk(deps, first!, now);

    // The companies' chains run to their end (in any order); the marks come with the very last range.
    const queue: RebuildMessage[] = [
      ...(last.next ? [last.next as RebuildMessage] : []),
      ...(sent.splice(0) as RebuildMessage[]),
    ];
    expect(queue.every((message) => message.stage === "companies")).toBe(true);
    let chunks = 0;
    while (queue.length > 0 && chunks++ < 200) {
      expect(await env.TRUST_INDEX.get(INDEX_COMPLETE_KEY)).toBeNull();
      const chunk = await rebuildChunk(deps, queue.pop()!, now);
      queue.push(...(sent.splice(0) as RebuildMessage[]), ...(chunk.next ? [chunk.next as RebuildMessage] : []));
    }
    expect(await env.TRUST_INDEX.get(INDEX_COMPLETE_KEY)).not.toBeNull();
    expect(await env.TRUST_INDEX.get(COMPANIES_COMPLETE_KEY)).not.toBeNull();
    expect(await rebuildStatus(deps)).toMatchObject({
      state: "complete",
      stage: null,
      complete: true,
      people,
      numbers: numbers.length,
    });
    expect(JSON.parse((await env.TRUST_INDEX.get(`num:${DEMO.bobPhone}`))!)).toMatchObject({ p: [DEMO.people.bob] });
  });

  it("started again while its chains are on their way, it doubles none; a copy landing after its stage ended does nothing", async () => {
    const sent = backgroundSends();
    const deps = createDeps(env);
    const now = new Date();
    const { people, numbers } = await numbersRanges(deps, sent, now);
    // The operator starts it again while every range's message is still on the queue: no range is sent twice
    // (before, each was, and the status counted every number twice).
    const again = await call("/internal/trust-index/rebuild", { method: "POST", token: ADMIN });
    expect(again.status).toBe(202);
    expect(await again.json()).toMatchObject({ state: "running", stage: "numbers" });
    expect(sent.splice(0)).toEqual([]);
    // The chains run to their end; the queue delivers a numbers message a second time (at least once delivery)
    // just after the companies' range of the same index finished: it must leave that range's record alone.
    const queue: RebuildMessage[] = [...numbers];
    let copied = false;
    for (let chunks = 0; queue.length > 0 && chunks < 500; chunks++) {
      const message = queue.shift()!;
      const chunk = await rebuildChunk(deps, message, now);
      queue.push(...(sent.splice(0) as RebuildMessage[]), ...(chunk.next ? [chunk.next as RebuildMessage] : []));
      const finished = message.stage === "companies" && !chunk.next && !chunk.done.complete;
      if (!copied && finished && numbers[message.range ?? 0]) {
        copied = true;
        queue.unshift(numbers[message.range ?? 0]!);
      }
    }
    expect(copied).toBe(true);
    expect(await rebuildStatus(deps)).toMatchObject({
      state: "complete",
      complete: true,
      people,
      numbers: numbers.length,
    });
  });

  it("a range whose chain broke is sent again by the minute cron once it stalled, and the rebuild then finishes", async () => {
    const sent = backgroundSends();
    const deps = createDeps(env);
    const now = new Date();
    const { numbers } = await numbersRanges(deps, sent, now);
    const [kept, ...lost] = numbers;
    await rebuildChunk(deps, kept!, now); // range 0 is done; the other ranges' messages were lost
    await tick();
    expect(sent.filter((m) => m.kind === "rebuild-index")).toEqual([]); // not stalled yet

    vi.useFakeTimers({ toFake: ["Date"], now: Date.now() + STALLED_MS + 1_000 });
    try {
      await tick();
      const again = sent.splice(0).filter((m) => m.kind === "rebuild-index") as RebuildMessage[];
      expect(again).toEqual(lost);
      expect(await env.TRUST_INDEX.get(INDEX_COMPLETE_KEY)).toBeNull();
      // Their chains run again (here: a restart of the rebuild resumes them, as the operator's command would).
      vi.restoreAllMocks();
      await rebuildNow(createDeps(env), new Date());
    } finally {
      vi.useRealTimers();
    }
    expect(await rebuildStatus(deps)).toMatchObject({ state: "complete", complete: true, numbers: numbers.length });
  });
});
