import {
  createExecutionContext,
  createScheduledController,
  runDurableObjectAlarm,
  runInDurableObject,
  waitOnExecutionContext,
} from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { receiverKey } from "../../src/domain/trust-records";
import worker from "../../src/index";
import type { BackgroundMessage } from "../../src/domain/queue-messages";
import { ERASE_CHUNK, ERASE_RETRY_MS } from "../../src/services/person-erasures";
import { listTrustRequests } from "../../src/routes/contacts/contacts.routes";
import {
  answer,
  as,
  call,
  countInPersonObject,
  countRows,
  DEMO,
  inPersonObject,
  insertToken,
  personObject,
} from "../helpers";

/**
 * Faults between people's objects (docs/architecture.md, "What crosses
 * people"): a trust request is charged and queued in one transaction in the
 * sender's object and delivered by its outbox; the erasure sweep continues
 * only while it erases; an erased object takes no late write.
 */

beforeEach(() => {
  // The failures these tests provoke are logged; the run shows only its summary.
  vi.spyOn(console, "error").mockImplementation(() => undefined);
});

afterEach(() => {
  vi.useRealTimers();
  vi.restoreAllMocks();
});

/** A fresh person in D1 with a token of their own. */
async function newPerson(id: number) {
  const now = Date.now();
  await env.DB.prepare(
    "INSERT INTO people (id, first_name, last_name, created_at, updated_at) VALUES (?1, 'Fault', 'Tester', ?2, ?2)",
  )
    .bind(id, now)
    .run();
  const token = `pk_fault_${id}_${crypto.randomUUID()}`;
  await insertToken(token, { personId: id });
  return token;
}

/** Fires the minute cron; answers the background messages it sent. */
async function minuteCron(): Promise<BackgroundMessage[]> {
  const sent: BackgroundMessage[] = [];
  const spy = vi.spyOn(env.BACKGROUND_QUEUE, "send").mockImplementation((async (body: BackgroundMessage) => {
    sent.push(body);
  }) as never);
  const ctx = createExecutionContext();
  await worker.scheduled!(createScheduledController({ cron: "* * * * *", scheduledTime: Date.now() }), env, ctx);
  await waitOnExecutionContext(ctx);
  spy.mockRestore();
  return sent;
}

describe("a trust request whose delivery failed", () => {
  it("is answered 201, charged once, kept in the sender's outbox and delivered by the sender's alarm", async () => {
    const sender = 720;
    const token = await newPerson(sender);
    const { alice } = DEMO.people;
    // The first delivery fails, as a call to an object that cannot be reached does.
    const get = env.PERSON.get.bind(env.PERSON);
    const aliceId = env.PERSON.idFromName(`person:${alice}`).toString();
    let refused = 0;
    vi.spyOn(env.PERSON, "get").mockImplementation(((id: DurableObjectId) =>
      id.toString() === aliceId && refused++ === 0
        ? { receiveTrustRequest: () => Promise.reject(new Error("Durable Object reset because its code was updated")) }
        : get(id)) as never);
    const asked = await call("/contacts/requests", {
      method: "POST",
      token,
      body: { user_id: alice, contact_reason: "we met at the conference" },
    });
    expect(asked.status).toBe(201);
    // Delivered after the answer: the first delivery is tried (and fails) a moment later.
    await expect.poll(() => refused).toBeGreaterThan(0);
    const pendingAtAlice = () =>
      inPersonObject(
        alice,
        "SELECT contact_reason FROM trust_requests WHERE requester_id = ? AND status = 'pending'",
        sender,
      );
    expect(await pendingAtAlice()).toEqual([]);
    expect(await countInPersonObject(sender, "SELECT count(*) AS n FROM request_outbox")).toBe(1);
    expect(await countInPersonObject(sender, "SELECT sum(sent) AS n FROM trust_request_days")).toBe(1);
    // The alarm is set within a minute for the retry.
    const alarm = await runInDurableObject(personObject(sender), (_, state) => state.storage.getAlarm());
    expect(alarm).not.toBeNull();
    expect(alarm!).toBeLessThanOrEqual(Date.now() + 60_000);

    expect(refused).toBeGreaterThan(0);
    expect(await runDurableObjectAlarm(personObject(sender))).toBe(true);
    expect(await pendingAtAlice()).toEqual([{ contact_reason: "we met at the conference" }]);
    expect(await countInPersonObject(sender, "SELECT count(*) AS n FROM request_outbox")).toBe(0);
    expect(await countInPersonObject(sender, "SELECT sum(sent) AS n FROM trust_request_days")).toBe(1);
    const listed = await answer(await as("alice").get("/contacts/requests"), 200, listTrustRequests);
    expect(listed.map((request) => request.id)).toContain(sender);
  });
});

describe("the erasure sweep", () => {
  it("with objects that keep failing: no continuation, no retry before the backoff, then erases them", async () => {
    const ids = Array.from({ length: ERASE_CHUNK + 10 }, (_, i) => 960_000 + i);
    const now = Date.now();
    for (const id of ids) {
      await env.DB.prepare("INSERT INTO person_erasures (person_id, due_at) VALUES (?, ?)").bind(id, now).run();
    }
    const calls: number[] = [];
    const get = env.PERSON.get.bind(env.PERSON);
    const idOf = new Map(ids.map((id) => [env.PERSON.idFromName(`person:${id}`).toString(), id]));
    const failing = vi.spyOn(env.PERSON, "get").mockImplementation(((id: DurableObjectId) => {
      const personId = idOf.get(id.toString());
      if (personId === undefined) return get(id);
      return {
        erase: async () => {
          calls.push(personId);
          throw new Error("Durable Object is overloaded");
        },
      };
    }) as never);

    const first = await minuteCron();
    expect(calls).toHaveLength(ERASE_CHUNK);
    expect(first.filter((message) => message.kind === "erase-persons")).toEqual([]); // no chain
    // A minute later: the failed ones wait out their backoff, only the 10 not tried yet are tried.
    vi.useFakeTimers({ toFake: ["Date"], now: now + 60_000 });
    calls.length = 0;
    const second = await minuteCron();
    expect(calls).toHaveLength(10);
    expect(second.filter((message) => message.kind === "erase-persons")).toEqual([]);

    // The objects answer again; after the backoff the sweep erases them all.
    failing.mockRestore();
    vi.useFakeTimers({ toFake: ["Date"], now: now + ERASE_RETRY_MS + 120_000 });
    const third = await minuteCron();
    expect(third.filter((message) => message.kind === "erase-persons")).toHaveLength(1); // a full chunk erased: on
    await minuteCron();
    expect(
      await countRows(
        "SELECT count(*) AS n FROM person_erasures WHERE person_id BETWEEN ? AND ?",
        ids[0]!,
        ids.at(-1)!,
      ),
    ).toBe(0);
  });
});

describe("an erased object", () => {
  it("drops a blocked call appended late, a fact push and a key rewrite", async () => {
    const personId = 970_001;
    const object = personObject(personId);
    const e164 = "+14155550917";
    await object.takeFacts({ personId, e164, companies: [], version: 1 });
    const call = { callerId: null, countryCode: "1", phoneNumber: "4155550100", createdAt: Date.now() };
    await object.recordBlockedCalls([call]);
    expect(await env.TRUST_INDEX.get(receiverKey(e164))).not.toBeNull();

    await object.erase();
    expect(await env.TRUST_INDEX.get(receiverKey(e164))).toBeNull();
    // Late: a blocked call still on its way, a fact push from queued index work, a lookup's miss.
    await object.recordBlockedCalls([call]);
    await object.takeFacts({ personId, e164, companies: [1], version: 2 });
    const answer = await object.receiverRecords({ personId, e164, companies: [], version: 3 }, 0, [receiverKey(e164)]);
    await object.receiveTrustRequest(DEMO.people.alice, "late", Date.now());
    await object.receiveMirror(DEMO.people.alice, true, Date.now());
    expect(answer.receiver.p).toBe(0);
    await runDurableObjectAlarm(object);

    expect(await countInPersonObject(personId, "SELECT count(*) AS n FROM blocked_calls")).toBe(0);
    expect(await countInPersonObject(personId, "SELECT count(*) AS n FROM facts")).toBe(0);
    expect(await countInPersonObject(personId, "SELECT count(*) AS n FROM trust_requests")).toBe(0);
    expect(await countInPersonObject(personId, "SELECT count(*) AS n FROM trusted_by")).toBe(0);
    expect(await countInPersonObject(personId, "SELECT count(*) AS n FROM erasure")).toBe(1);
    expect(await env.TRUST_INDEX.get(receiverKey(e164))).toBeNull();
  });

  it("refuses a chat and drops a late trust request, mirror, key rewrite and blocked call; sets no alarm", async () => {
    const personId = 970_002;
    const object = personObject(personId);
    const e164 = "+14155550918";
    await object.takeFacts({ personId, e164, companies: [], version: 1 });
    await object.erase();
    expect(await runInDurableObject(object, (_, state) => state.storage.getAlarm())).toBeNull();

    const now = Date.now();
    const row = {
      id: 1,
      type: "chat",
      message: "late",
      createdAt: new Date(now),
      personId: DEMO.people.alice,
      peerId: personId,
    } as unknown as Parameters<typeof object.acceptChat>[0];
    const sender = { personId: DEMO.people.alice, companies: [], e164: null };
    expect(await object.acceptChat(row, false, sender)).toMatchObject({ ok: false, status: 404 });
    await object.receiveTrustRequest(DEMO.people.alice, "late", now);
    await object.receiveMirror(DEMO.people.alice, true, now);
    await object.rewriteKeys({ personId, e164, companies: [], version: 2 });
    await object.recordBlockedCalls([{ callerId: null, countryCode: "1", phoneNumber: "4155550100", createdAt: now }]);

    for (const table of ["feed", "trust_requests", "trusted_by", "facts", "blocked_calls"])
      expect(await countInPersonObject(personId, `SELECT count(*) AS n FROM ${table}`)).toBe(0);
    expect(await runInDurableObject(object, (_, state) => state.storage.getAlarm())).toBeNull();
    expect(await env.TRUST_INDEX.get(receiverKey(e164))).toBeNull();
  });
});

describe("the object's alarm", () => {
  it("keeps the sooner of two times asked at once (the scheduler orders its reads and sets)", async () => {
    const object = personObject(970_003);
    const now = Date.now();
    await runInDurableObject(object, async (instance) => {
      const jobs = (instance as unknown as { jobs: { alarmBy(when: number): Promise<void> } }).jobs;
      await Promise.all([jobs.alarmBy(now + 1_000), jobs.alarmBy(now + 60_000)]);
    });
    expect(await runInDurableObject(object, (_, state) => state.storage.getAlarm())).toBe(now + 1_000);
  });
});
