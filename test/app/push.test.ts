import { env } from "cloudflare:workers";
import { eq } from "drizzle-orm";
import { afterEach, beforeEach, describe, expect, inject, it, vi } from "vitest";
import { createDb } from "../../src/db/client";
import { accessTokens, people } from "../../src/db/schema";
import { PUSH_RETRY_MS, PUSH_TTL_SECONDS, type PushJob } from "../../src/domain/push";
import { SILENT_SOCKET_MS } from "../../src/domain/stream";
import { base64url, fromBase64url } from "../../src/lib/crypto";
import { ApiError } from "../../src/lib/errors";
import { Person as PersonObject } from "../../src/objects/person/person";
import { createDeps } from "../../src/services/create-deps";
import { forgetApnsTokens } from "../../src/services/push/apns";
import { forgetFcmTokens, FCM_SCOPE, FCM_TOKEN_URL } from "../../src/services/push/fcm";
import { registerPush } from "../../src/services/push";
import { encryptPayload } from "../../src/services/push/web-push";
import { putMyDevicePush } from "../../src/routes/me/me.routes";
import { answer, call, fresh, inPersonObject, insertToken, personObject, sendChat } from "../helpers";
import type { Received } from "../support/web-push-receiver";
import { consume } from "../webhook-receiver";

/**
 * Push (docs/app.md, "Push"): `PUT`/`DELETE /me/devices/{id}/push`, the person's object queueing a push
 * job for each registered device without an open stream when a chat, a trust request or a missed call
 * arrives, and the `background` consumer sending it. Web Push goes end to end to a receiver in Node
 * that decrypts with `http_ece` and checks VAPID (test/support/web-push-receiver.ts); FCM and APNs go
 * to a fetch stub and are compared with their documented request shapes. The `background` queue is a
 * sink in the tests (test/vitest.config.ts): the jobs are caught where the object sends them and run
 * through the consumer as the queue would.
 */

type Job = PushJob & { kind: "push" };
type Person = { id: number; token: string; tokenId: number };

const db = () => createDb(env.DB);
const receiver = inject("webPushReceiver");

async function newPerson(first: string): Promise<Person> {
  const [row] = await db().insert(people).values({ firstName: first, lastName: "Push" }).returning({ id: people.id });
  return newDevice(row!.id);
}

/** Another device (person token) of `personId`. */
async function newDevice(personId: number): Promise<Person> {
  const token = `pk_${fresh("push").replaceAll(".", "_")}`;
  await insertToken(token, { personId });
  const [t] = await db()
    .select({ id: accessTokens.id })
    .from(accessTokens)
    .where(eq(accessTokens.prefix, token.slice(0, 8)))
    .all()
    .then((rows) => rows.slice(-1));
  return { id: personId, token, tokenId: t!.id };
}

const putPush = (who: Person, deviceId: number, body: unknown) =>
  call(`/me/devices/${deviceId}/push`, { method: "PUT", token: who.token, body });

async function register(who: Person, body: unknown, deviceId = who.tokenId) {
  return answer(await putPush(who, deviceId, body), 200, putMyDevicePush);
}

/** A subscription of the Node receiver, answering its pushes with `answers` in turn (then 201). */
async function subscription(answers: number[] = []) {
  const response = await fetch(`${receiver}/subscriptions`, { method: "POST", body: JSON.stringify({ answers }) });
  // The Node receiver's own answer, not this API's: no route schema to read it with.
  return (await response.json()) as { endpoint: string; keys: { p256dh: string; auth: string } };
}

/** What the Node receiver got (its own answer, not this API's: no route schema to read it with). */
const received = async (endpoint: string) => (await (await fetch(endpoint)).json()) as Received[];

/**
 * The push jobs queued from now on (by any person's object: the spy is on the queue's prototype, which
 * the objects' bindings share with the test's), in order.
 */
function queuedPushes(): Job[] {
  const jobs: Job[] = [];
  const queue = Object.getPrototypeOf(env.BACKGROUND_QUEUE) as Queue;
  vi.spyOn(queue, "sendBatch").mockImplementation(async (messages) => {
    for (const { body } of messages) if ((body as Job).kind === "push") jobs.push(body as Job);
    return undefined as never;
  });
  vi.spyOn(queue, "send").mockImplementation(async (body) => {
    if ((body as Job).kind === "push") jobs.push(body as Job);
    return undefined as never;
  });
  return jobs;
}

/** Waits until `jobs` holds `count` (within 5 s: the contract's bound from arrival to push). */
async function until(jobs: Job[], count: number) {
  await vi.waitFor(() => expect(jobs.length).toBeGreaterThanOrEqual(count), { timeout: 5_000, interval: 10 });
  return jobs.slice();
}

/** Gives queued work that should not happen a moment to show itself. */
const settle = () => new Promise((resolve) => setTimeout(resolve, 150));

const chat = sendChat;

/** An open stream of `who`'s device; `close()` ends it. */
async function openStream(who: Person) {
  const res = await call("/apps/buzz/stream", { token: who.token, headers: { Upgrade: "websocket" } });
  expect(res.status).toBe(101);
  const ws = res.webSocket!;
  ws.accept();
  return ws;
}

const runJob = (job: Job, attempts = 1, bindings: Partial<Env> = {}) => consume("background", job, attempts, bindings);

beforeEach(() => {
  forgetFcmTokens();
  forgetApnsTokens();
});
afterEach(() => {
  vi.restoreAllMocks();
});

/* ---------- registering ---------- */

describe("PUT and DELETE /me/devices/{id}/push", () => {
  it("registers each kind (one registration per device, the last wins) and removes it", async () => {
    const bob = await newPerson("Registering");
    const sub = await subscription();
    const web = await register(bob, { kind: "webpush", subscription: { ...sub, expirationTime: null } });
    expect(web).toEqual({
      device_id: bob.tokenId,
      kind: "webpush",
      subscription: sub,
      updated_at: expect.stringMatching(/Z$/),
    });
    const fcm = await register(bob, { kind: "fcm", token: "fcm-token:APA91bGtC-wH4s" });
    expect(fcm).toMatchObject({ device_id: bob.tokenId, kind: "fcm", token: "fcm-token:APA91bGtC-wH4s" });
    const apns = await register(bob, { kind: "apns", token: "AB".repeat(32), topic: "com.example.privacy" });
    expect(apns).toMatchObject({ kind: "apns", token: "ab".repeat(32), topic: "com.example.privacy", sandbox: false });
    // A removal about another target (a push service's 410 about an older one) leaves it alone.
    const kept = await personObject(bob.id).changePush(bob.tokenId, null, { kind: "fcm", token: "an-older-token" });
    expect(kept).toMatchObject({ deviceId: bob.tokenId, target: { kind: "apns" } });

    const removed = await call(`/me/devices/${bob.tokenId}/push`, { method: "DELETE", token: bob.token });
    expect(removed.status).toBe(204);
    const jobs = queuedPushes();
    await personObject(bob.id).receiveTrustRequest(1, "hello", Date.now());
    await settle();
    expect(jobs).toEqual([]);
    // Removing again changes nothing.
    expect((await call(`/me/devices/${bob.tokenId}/push`, { method: "DELETE", token: bob.token })).status).toBe(204);
  });

  it("only for the caller's own devices: another of theirs is fine, anyone else's (or none) is a 404", async () => {
    const bob = await newPerson("Owner");
    const tablet = await newDevice(bob.id);
    const eve = await newPerson("Other");
    const body = { kind: "fcm", token: "fcm-token:for-the-tablet" };
    expect((await register(bob, body, tablet.tokenId)).device_id).toBe(tablet.tokenId);
    expect((await putPush(eve, bob.tokenId, body)).status).toBe(404);
    expect((await call(`/me/devices/${bob.tokenId}/push`, { method: "DELETE", token: eve.token })).status).toBe(404);
    expect((await putPush(bob, 999_999_999, body)).status).toBe(404);
    expect((await putPush(bob, 1, body)).status).toBe(404); // a service token's id: not a device
    expect((await call(`/me/devices/${tablet.tokenId}/push`, { method: "PUT", body })).status).toBe(401);
  });

  it("refuses what cannot be pushed to, with 400", async () => {
    const bob = await newPerson("Refused");
    const sub = await subscription();
    const bad: unknown[] = [
      {},
      { kind: "sms", token: "x" },
      { kind: "webpush", subscription: { ...sub, endpoint: "not a url" } },
      { kind: "webpush", subscription: { ...sub, endpoint: "ftp://127.0.0.1/push" } },
      { kind: "webpush", subscription: { ...sub, keys: { ...sub.keys, auth: "short" } } },
      { kind: "webpush", subscription: { ...sub, keys: { ...sub.keys, p256dh: base64url(new Uint8Array(65)) } } },
      // 65 bytes starting 0x04, but not a point on the curve.
      {
        kind: "webpush",
        subscription: { ...sub, keys: { ...sub.keys, p256dh: base64url(new Uint8Array(65).fill(4)) } },
      },
      { kind: "fcm", token: "has spaces in it, not a token" },
      { kind: "apns", token: "not-hex", topic: "com.example.privacy" },
      { kind: "apns", token: "ab".repeat(32) },
      { kind: "apns", token: "ab".repeat(32), topic: "com.example.privacy", sandbox: "yes" },
    ];
    for (const body of bad) expect((await putPush(bob, bob.tokenId, body)).status, JSON.stringify(body)).toBe(400);
  });

  it("outside development a Web Push endpoint must be https on a public host, as webhooks' are", async () => {
    const bob = await newPerson("Production");
    const deps = createDeps({ ...env, ENVIRONMENT: "production" } as Env);
    const caller = { personId: bob.id, tokenId: bob.tokenId };
    const sub = await subscription();
    const attempt = (endpoint: string) =>
      registerPush(deps, caller, bob.tokenId, { kind: "webpush", subscription: { ...sub, endpoint } });
    await expect(attempt(sub.endpoint)).rejects.toThrow(/must be an https:\/\/ URL/);
    await expect(attempt("https://127.0.0.1/push/1")).rejects.toBeInstanceOf(ApiError);
    await expect(attempt("https://push.example.com/wpush/1")).resolves.toMatchObject({ deviceId: bob.tokenId });
  });

  it("one install, two accounts: the second account's registration of the same token ends the first's", async () => {
    const first = await newPerson("Before");
    const second = await newPerson("After");
    const token = { kind: "fcm", token: `fcm-token:shared-install-${first.id}` };
    await register(first, token);
    // Signed out without a word (app data cleared), another account signs in on the same phone.
    await register(second, token);
    const registered = (who: Person) => inPersonObject(who.id, "SELECT device_id FROM push_registrations");
    expect(await registered(first)).toEqual([]);
    expect(await registered(second)).toEqual([{ device_id: second.tokenId }]);
    const jobs = queuedPushes();
    await personObject(first.id).receiveTrustRequest(1, "for the first account", Date.now());
    await settle();
    expect(jobs).toEqual([]);
    // Registering again (every launch) changes nothing; the first account registering it back takes it back.
    await register(second, token);
    expect(await registered(second)).toEqual([{ device_id: second.tokenId }]);
    await register(first, token);
    expect(await registered(second)).toEqual([]);
    // A device registering another address leaves the first holder's alone.
    await register(second, { kind: "fcm", token: `fcm-token:another-install-${second.id}` });
    expect(await registered(first)).toEqual([{ device_id: first.tokenId }]);
  });

  it("deleting the device deletes its registration", async () => {
    const bob = await newPerson("Signing out");
    const phone = await newDevice(bob.id);
    await register(phone, { kind: "fcm", token: "fcm-token:signed-out" });
    expect((await call(`/me/devices/${phone.tokenId}`, { method: "DELETE", token: bob.token })).status).toBe(204);
    const jobs = queuedPushes();
    await personObject(bob.id).receiveTrustRequest(1, "hello", Date.now());
    await settle();
    expect(jobs).toEqual([]);
  });
});

/* ---------- who is woken ---------- */

describe("what arrives wakes the devices with no open stream", () => {
  it("a chat, a trust request and a missed call each queue one push per sleeping device: {type, id} only", async () => {
    const alice = await newPerson("Sender");
    const bob = await newPerson("Sleeper");
    const laptop = await newDevice(bob.id);
    await register(bob, { kind: "fcm", token: "fcm-token:phone-of-bob" });
    await register(laptop, { kind: "webpush", subscription: await subscription() });
    const jobs = queuedPushes();

    const started = Date.now();
    const chatId = await chat(alice, bob.id);
    const chats = await until(jobs, 2);
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(chats.map((job) => [job.deviceId, job.event])).toEqual(
      expect.arrayContaining([
        [bob.tokenId, { type: "chat", id: chatId }],
        [laptop.tokenId, { type: "chat", id: chatId }],
      ]),
    );
    expect(chats[0]).toMatchObject({ kind: "push", personId: bob.id, at: expect.any(Number) });

    await personObject(bob.id).receiveTrustRequest(alice.id, "we met", Date.now());
    const asked = (await until(jobs, 4)).slice(2);
    expect(asked.map((job) => job.event.type)).toEqual(["trust_request", "trust_request"]);
    expect(asked[0]!.event.id).toBeGreaterThan(0);

    await personObject(bob.id).recordBlockedCalls([
      { callerId: "+16505550123", countryCode: "1", phoneNumber: "6505550123", createdAt: Date.now() },
    ]);
    const missed = (await until(jobs, 6)).slice(4);
    expect(missed.map((job) => job.event.type)).toEqual(["missed_call", "missed_call"]);
    // The job names the device and where it is woken, never what arrived.
    expect(JSON.stringify(jobs)).not.toContain("aGk=");
    expect(JSON.stringify(jobs)).not.toContain("we met");
    expect(JSON.stringify(jobs)).not.toContain("6505550123");
  });

  it("a person with 150 sleeping devices: every one is woken, in batches the queue takes (at most 100)", async () => {
    const alice = await newPerson("Sender");
    const bob = await newPerson("Many");
    await inPersonObject(
      bob.id,
      `INSERT INTO push_registrations (device_id, kind, target, updated_at)
       SELECT 900000 + value, 'fcm', json_object('kind', 'fcm', 'token', 'fcm-token:many-' || value), 0
       FROM json_each(?)`,
      JSON.stringify(Array.from({ length: 150 }, (_, i) => i)),
    );
    const batches: number[] = [];
    const queue = Object.getPrototypeOf(env.BACKGROUND_QUEUE) as Queue;
    vi.spyOn(queue, "sendBatch").mockImplementation(async (messages) => {
      const list = [...messages];
      if (list.length > 100) throw new Error(`sendBatch with ${list.length} messages`); // as Cloudflare Queues refuses
      batches.push(list.filter((message) => (message.body as Job).kind === "push").length);
      return undefined as never;
    });
    await chat(alice, bob.id);
    await vi.waitFor(() => expect(batches.reduce((sum, n) => sum + n, 0)).toBe(150), { timeout: 5_000, interval: 10 });
    expect(Math.max(...batches)).toBeLessThanOrEqual(100);
  });

  it("a stream silent past its pings (a phone gone without a close frame) no longer holds its device's push back", async () => {
    const alice = await newPerson("Chatty");
    const bob = await newPerson("Offline");
    await register(bob, { kind: "fcm", token: "fcm-token:phone-in-a-tunnel" });
    const stream = await openStream(bob);
    // Connected, and not pinged since, longer than the pings' interval allows.
    const { runInDurableObject } = await import("cloudflare:test");
    await runInDurableObject(personObject(bob.id), (_, state) => {
      for (const ws of state.getWebSockets()) {
        const att = ws.deserializeAttachment() as { since: number };
        ws.serializeAttachment({ ...att, since: Date.now() - SILENT_SOCKET_MS - 1_000 });
      }
    });
    const jobs = queuedPushes();
    await chat(alice, bob.id);
    await until(jobs, 1);
    expect(jobs.map((job) => job.deviceId)).toEqual([bob.tokenId]);

    // It pings again: it is heard, and holds the push back once more.
    const pong = new Promise((resolve) => stream.addEventListener("message", (event) => resolve(event.data)));
    stream.send("ping");
    expect(await pong).toBe("pong");
    jobs.length = 0;
    await chat(alice, bob.id);
    await settle();
    expect(jobs).toEqual([]);
    stream.close(1000, "done");
  });

  it("no push while a stream is open: only the devices without one are woken", async () => {
    const alice = await newPerson("Chatty");
    const bob = await newPerson("Watching");
    const laptop = await newDevice(bob.id);
    await register(bob, { kind: "fcm", token: "fcm-token:phone-watching" });
    await register(laptop, { kind: "fcm", token: "fcm-token:laptop-asleep" });
    const stream = await openStream(bob);
    const jobs = queuedPushes();
    await chat(alice, bob.id);
    await until(jobs, 1);
    await settle();
    expect(jobs.map((job) => job.deviceId)).toEqual([laptop.tokenId]);

    // Both connected: nobody is woken.
    const laptopStream = await openStream(laptop);
    jobs.length = 0;
    await chat(alice, bob.id);
    await settle();
    expect(jobs).toEqual([]);

    // The phone's stream closes: the phone is woken again.
    stream.close(1000, "backgrounded");
    await vi.waitFor(async () => {
      jobs.length = 0;
      await chat(alice, bob.id);
      await settle();
      expect(jobs.map((job) => job.deviceId)).toEqual([bob.tokenId]);
    });
    laptopStream.close(1000, "done");
  });

  it("what is not new wakes nobody: a repeated chat, a read indicator, a trust request delivered again", async () => {
    const alice = await newPerson("Repeater");
    const bob = await newPerson("Quiet");
    await register(bob, { kind: "fcm", token: "fcm-token:quiet-phone" });
    const jobs = queuedPushes();
    const body = {
      type: "chat_message",
      sendable_type: "person",
      sendable_id: alice.id,
      receivable_type: "person",
      receivable_id: bob.id,
      message: "aGk=",
      message_id: crypto.randomUUID(),
    };
    for (let i = 0; i < 2; i++) {
      expect((await call("/apps/buzz/activity", { method: "POST", token: alice.token, body })).status).toBe(200);
    }
    await chat(alice, bob.id, "chat_read_indicator");
    const askedAt = Date.now();
    await personObject(bob.id).receiveTrustRequest(alice.id, "hi", askedAt);
    await personObject(bob.id).receiveTrustRequest(alice.id, "hi", askedAt);
    await until(jobs, 2);
    await settle();
    expect(jobs.map((job) => job.event.type)).toEqual(["chat", "trust_request"]);
  });
});

/* ---------- Web Push ---------- */

describe("Web Push (RFC 8030, 8291 aes128gcm, 8292 VAPID)", () => {
  it("encrypts as RFC 8291's worked example (Appendix A), byte for byte", async () => {
    const asPublic = fromBase64url(
      "BP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27mlmlMoZIIgDll6e3vCYLocInmYWAmS6TlzAC8wEqKK6PBru3jl7A8",
    );
    const privateKey = await crypto.subtle.importKey(
      "jwk",
      {
        kty: "EC",
        crv: "P-256",
        d: "yfWPiYE-n46HLnH0KqZOF1fJJU3MYrct3AELtAQ-oRw",
        x: base64url(asPublic.slice(1, 33)),
        y: base64url(asPublic.slice(33, 65)),
      },
      { name: "ECDH", namedCurve: "P-256" },
      false,
      ["deriveBits"],
    );
    const body = await encryptPayload(
      new TextEncoder().encode("When I grow up, I want to be a watermelon"),
      {
        p256dh: "BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4",
        auth: "BTBZMqHH6r4Tts7J_aSIgg",
      },
      { salt: fromBase64url("DGv6ra1nlYgDCS1FRnbzlw"), server: { privateKey, publicKey: asPublic } },
      0,
    );
    expect(base64url(body)).toBe(
      "DGv6ra1nlYgDCS1FRnbzlwAAEABBBP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27mlmlMoZIIgDll6e3vCYLocInmYWAmS6TlzAC8wEqKK6PBru3jl7A_yl95bQpu6cVPTpK4Mqgkf1CXztLVBSt2Ks3oZwbuwXPXLWyouBWLVWGNWQexSgSxsj_Qulcy4a-fN",
    );
  });

  it("a chat to a sleeping browser: the receiver decrypts {type, id} with http_ece and verifies VAPID", async () => {
    const alice = await newPerson("Web sender");
    const bob = await newPerson("Web sleeper");
    const sub = await subscription();
    await register(bob, { kind: "webpush", subscription: sub });
    const jobs = queuedPushes();
    const chatId = await chat(alice, bob.id);
    const [job] = await until(jobs, 1);
    const result = await runJob(job!);
    expect(result.explicitAcks).toEqual(["msg-1"]);

    const [push] = await received(sub.endpoint);
    expect(push!.error).toBeNull();
    expect(JSON.parse(push!.payload!)).toEqual({ type: "chat", id: chatId });
    expect(push!.headers).toMatchObject({
      "content-encoding": "aes128gcm",
      "content-type": "application/octet-stream",
      ttl: String(PUSH_TTL_SECONDS),
      urgency: "high",
      topic: "chat",
    });
    // VAPID: the deployment's key, an ES256 JWT for the push service's origin, at most 24 h, a contact.
    expect(push!.vapid).toMatchObject({
      verified: true,
      k: env.VAPID_PUBLIC_KEY,
      header: { alg: "ES256", typ: "JWT" },
    });
    const claims = push!.vapid!.claims as { aud: string; exp: number; sub: string };
    expect(claims.aud).toBe(new URL(sub.endpoint).origin);
    expect(claims.sub).toBe(env.VAPID_SUBJECT);
    expect(claims.exp * 1000 - Date.now()).toBeGreaterThan(60_000);
    expect(claims.exp * 1000 - Date.now()).toBeLessThanOrEqual(24 * 3600 * 1000);
    // Every payload is padded alike: its length says nothing of the type or the id.
    expect(Number(push!.headers["content-length"])).toBe(16 + 4 + 1 + 65 + 64 + 16);
  });

  it("sends what web-push's generateRequestDetails would: the same headers, and bodies the same receiver decrypts", async () => {
    const sub = await subscription();
    const bob = await newPerson("Reference");
    await register(bob, { kind: "webpush", subscription: sub });
    const jobs = queuedPushes();
    await personObject(bob.id).receiveTrustRequest(1, "x", Date.now());
    const [job] = await until(jobs, 1);
    await runJob(job!);
    const payload = JSON.stringify(job!.event);
    // The reference library's request, as the Node receiver answers it (not this API's answer).
    const reference = (await (
      await fetch(`${receiver}/reference`, {
        method: "POST",
        body: JSON.stringify({
          subscription: sub,
          payload,
          vapid: { subject: env.VAPID_SUBJECT, publicKey: env.VAPID_PUBLIC_KEY, privateKey: env.VAPID_PRIVATE_KEY },
          ttl: PUSH_TTL_SECONDS,
          urgency: "high",
          topic: "trust_request",
        }),
      })
    ).json()) as { method: string; headers: Record<string, string | number>; body: string };
    const sent = await fetch(sub.endpoint, {
      method: reference.method,
      headers: Object.fromEntries(Object.entries(reference.headers).map(([k, v]) => [k, String(v)])),
      body: Uint8Array.from(atob(reference.body), (c) => c.charCodeAt(0)),
    });
    expect(sent.status).toBe(201);
    const [ours, theirs] = await received(sub.endpoint);
    expect(theirs!.payload).toBe(payload);
    expect(ours!.payload).toBe(payload);
    const names = (push: Received) =>
      Object.keys(push.headers)
        .filter(
          (name) =>
            ![
              "host",
              "connection",
              "accept",
              "accept-encoding",
              "user-agent",
              "accept-language",
              "sec-fetch-mode",
            ].includes(name),
        )
        .sort();
    expect(names(ours!)).toEqual(names(theirs!));
    for (const name of ["content-encoding", "content-type", "ttl", "urgency", "topic"]) {
      expect(ours!.headers[name], name).toBe(theirs!.headers[name]);
    }
    expect(ours!.vapid!.claims.aud).toBe(theirs!.vapid!.claims.aud);
    expect(ours!.vapid!.claims.sub).toBe(theirs!.vapid!.claims.sub);
  });

  it("a 410 from the push service removes the registration", async () => {
    const bob = await newPerson("Gone");
    const sub = await subscription([410]);
    await register(bob, { kind: "webpush", subscription: sub });
    const jobs = queuedPushes();
    await personObject(bob.id).receiveTrustRequest(1, "x", Date.now());
    const [job] = await until(jobs, 1);
    expect((await runJob(job!)).explicitAcks).toEqual(["msg-1"]);
    expect((await received(sub.endpoint)).map((push) => push.status)).toEqual([410]);
    jobs.length = 0;
    await personObject(bob.id).receiveTrustRequest(2, "y", Date.now());
    await settle();
    expect(jobs).toEqual([]);
  });

  it("a 410 about an older subscription leaves the newer one registered", async () => {
    const bob = await newPerson("Renewed");
    const old = await subscription([410]);
    await register(bob, { kind: "webpush", subscription: old });
    const jobs = queuedPushes();
    await personObject(bob.id).receiveTrustRequest(1, "x", Date.now());
    const [job] = await until(jobs, 1);
    const renewed = await subscription();
    await register(bob, { kind: "webpush", subscription: renewed });
    await runJob(job!);
    await personObject(bob.id).receiveTrustRequest(2, "y", Date.now());
    const [, next] = await until(jobs, 2);
    expect(next!.target).toEqual({ kind: "webpush", subscription: renewed });
  });

  it("a 5xx is retried with backoff, and the retry arrives; a push past its retry window is dropped", async () => {
    const bob = await newPerson("Retried");
    const sub = await subscription([503, 500]);
    await register(bob, { kind: "webpush", subscription: sub });
    const jobs = queuedPushes();
    await personObject(bob.id).receiveTrustRequest(1, "x", Date.now());
    const [job] = await until(jobs, 1);
    const first = await runJob(job!, 1);
    expect(first.retryMessages).toEqual([{ msgId: "msg-1" }]);
    expect(first.retryDelays).toEqual([2]);
    const second = await runJob(job!, 2);
    expect(second.retryDelays).toEqual([4]);
    const third = await runJob(job!, 3);
    expect(third.explicitAcks).toEqual(["msg-1"]);
    const pushes = await received(sub.endpoint);
    expect(pushes.map((push) => push.status)).toEqual([503, 500, 201]);
    expect(pushes.every((push) => push.payload === JSON.stringify(job!.event))).toBe(true);

    // Failing still after `PUSH_RETRY_MS`: acknowledged and logged, never a dead letter.
    const late = await subscription([503]);
    const stale = { ...job!, target: { kind: "webpush" as const, subscription: late }, at: Date.now() - PUSH_RETRY_MS };
    const dropped = await runJob(stale, 9);
    expect(dropped.explicitAcks).toEqual(["msg-1"]);
    expect(dropped.retryMessages).toEqual([]);
  });

  it("without the VAPID secrets a push is skipped (logged, acknowledged), not a crash", async () => {
    const sub = await subscription();
    const bob = await newPerson("Unconfigured");
    const job: Job = {
      kind: "push",
      personId: bob.id,
      deviceId: bob.tokenId,
      target: { kind: "webpush", subscription: sub },
      event: { type: "chat", id: 1 },
      at: Date.now(),
    };
    const errors = vi.spyOn(console, "error").mockImplementation(() => undefined);
    const result = await runJob(job, 1, { VAPID_PRIVATE_KEY: undefined });
    expect(result.explicitAcks).toEqual(["msg-1"]);
    expect(await received(sub.endpoint)).toEqual([]);
    expect(errors.mock.calls.map(([line]) => String(line)).join("\n")).toContain("VAPID_PRIVATE_KEY");
  });
});

/* ---------- FCM and APNs, against their documented request shapes ---------- */

type Seen = { url: string; method: string; headers: Headers; body: string };

/** Stubs fetch for Google's and Apple's hosts: `answer` decides each response; loopback passes through. */
function pushServices(answer: (request: Seen) => Response) {
  const seen: Seen[] = [];
  const realFetch = globalThis.fetch;
  vi.spyOn(globalThis, "fetch").mockImplementation(async (input, init) => {
    const request = new Request(input as RequestInfo, init);
    const host = new URL(request.url).hostname;
    if (!/(googleapis\.com|push\.apple\.com)$/.test(host)) return realFetch(input as RequestInfo, init);
    const body = new TextDecoder().decode(await request.arrayBuffer());
    const call = { url: request.url, method: request.method, headers: request.headers, body };
    seen.push(call);
    return answer(call);
  });
  return seen;
}

const json = (value: unknown, status = 200) =>
  new Response(JSON.stringify(value), { status, headers: { "Content-Type": "application/json" } });

/** A JWT's parts, its signature checked with `key` (`algorithm`'s parameters). */
async function readJwt(jwt: string, key: CryptoKey, algorithm: SubtleCryptoSignAlgorithm) {
  const [header, claims, signature] = jwt.split(".") as [string, string, string];
  const verified = await crypto.subtle.verify(
    algorithm,
    key,
    fromBase64url(signature),
    new TextEncoder().encode(`${header}.${claims}`),
  );
  const part = (text: string) => JSON.parse(new TextDecoder().decode(fromBase64url(text))) as Record<string, unknown>;
  return { verified, header: part(header), claims: part(claims) };
}

/** The public half of a PEM private key (the test secrets are made in test/vitest.config.ts). */
async function publicKeyOf(pem: string, algorithm: "RS256" | "ES256") {
  const der = fromBase64url(pem.replace(/-----[A-Z ]+-----/g, "").replace(/\s+/g, ""));
  const params =
    algorithm === "RS256" ? { name: "RSASSA-PKCS1-v1_5", hash: "SHA-256" } : { name: "ECDSA", namedCurve: "P-256" };
  const key = await crypto.subtle.importKey("pkcs8", der, params, true, ["sign"]);
  const {
    d: _,
    dp: _dp,
    dq: _dq,
    p: _p,
    q: _q,
    qi: _qi,
    ...publicJwk
  } = (await crypto.subtle.exportKey("jwk", key)) as JsonWebKey;
  return crypto.subtle.importKey("jwk", { ...publicJwk, key_ops: ["verify"] }, params, false, ["verify"]);
}

const jobFor = (who: Person, target: Job["target"], type: Job["event"]["type"] = "chat", id = 42): Job => ({
  kind: "push",
  personId: who.id,
  deviceId: who.tokenId,
  target,
  event: { type, id },
  at: Date.now(),
});

describe("FCM HTTP v1", () => {
  const account = () => JSON.parse(env.FCM_SERVICE_ACCOUNT!) as Record<string, string>;

  it("trades a service-account RS256 JWT for an access token (kept until it expires), then sends a data message", async () => {
    const bob = await newPerson("Android");
    await register(bob, { kind: "fcm", token: "fcm-token:android-device-1" });
    const seen = pushServices((request) =>
      request.url === FCM_TOKEN_URL
        ? json({ access_token: "ya29.test-access-token", expires_in: 3599, token_type: "Bearer" })
        : json({ name: "projects/privacy-test/messages/0:1" }),
    );
    const job = jobFor(bob, { kind: "fcm", token: "fcm-token:android-device-1" }, "missed_call", 77);
    expect((await runJob(job)).explicitAcks).toEqual(["msg-1"]);
    expect((await runJob({ ...job, event: { type: "chat", id: 78 } })).explicitAcks).toEqual(["msg-1"]);
    expect(seen.map((request) => `${request.method} ${request.url}`)).toEqual([
      `POST ${FCM_TOKEN_URL}`,
      "POST https://fcm.googleapis.com/v1/projects/privacy-test/messages:send",
      "POST https://fcm.googleapis.com/v1/projects/privacy-test/messages:send",
    ]);

    // The OAuth 2.0 JWT bearer grant (RFC 7523), as Google's service-account flow documents it.
    const [grant, first, second] = seen as [Seen, Seen, Seen];
    expect(grant.headers.get("content-type")).toBe("application/x-www-form-urlencoded");
    const form = new URLSearchParams(grant.body);
    expect([...form.keys()].sort()).toEqual(["assertion", "grant_type"]);
    expect(form.get("grant_type")).toBe("urn:ietf:params:oauth:grant-type:jwt-bearer");
    const jwt = await readJwt(form.get("assertion")!, await publicKeyOf(account().private_key!, "RS256"), {
      name: "RSASSA-PKCS1-v1_5",
    });
    expect(jwt.verified).toBe(true);
    expect(jwt.header).toEqual({ typ: "JWT", alg: "RS256", kid: "test-key-1" });
    const claims = jwt.claims as { iss: string; scope: string; aud: string; iat: number; exp: number };
    expect(claims).toMatchObject({ iss: account().client_email, scope: FCM_SCOPE, aud: FCM_TOKEN_URL });
    expect(claims.exp - claims.iat).toBe(3600);

    // messages:send with the access token: a data message, strings only, one collapse key per type.
    expect(first.headers.get("authorization")).toBe("Bearer ya29.test-access-token");
    expect(first.headers.get("content-type")).toBe("application/json");
    expect(JSON.parse(first.body)).toEqual({
      message: {
        token: "fcm-token:android-device-1",
        data: { type: "missed_call", id: "77" },
        android: { collapse_key: "missed_call", priority: "high", ttl: `${PUSH_TTL_SECONDS}s` },
      },
    });
    expect(second.headers.get("authorization")).toBe("Bearer ya29.test-access-token");
    expect(JSON.parse(second.body).message.android.collapse_key).toBe("chat");
  });

  it("404 UNREGISTERED removes the registration; 401 gets a new access token on the retry; 503 is retried", async () => {
    const bob = await newPerson("Uninstalled");
    const target = { kind: "fcm" as const, token: "fcm-token:uninstalled-app" };
    await register(bob, target);
    const answers = [
      json({ error: { code: 401, status: "UNAUTHENTICATED" } }, 401),
      json({ error: { code: 503, status: "UNAVAILABLE" } }, 503),
      json({ error: { code: 404, status: "NOT_FOUND", details: [{ errorCode: "UNREGISTERED" }] } }, 404),
    ];
    let grants = 0;
    const seen = pushServices((request) => {
      if (request.url === FCM_TOKEN_URL) return json({ access_token: `token-${++grants}`, expires_in: 3599 });
      return answers.shift()!;
    });
    expect((await runJob(jobFor(bob, target), 1)).retryDelays).toEqual([2]);
    expect((await runJob(jobFor(bob, target), 2)).retryDelays).toEqual([4]);
    expect((await runJob(jobFor(bob, target), 3)).explicitAcks).toEqual(["msg-1"]);
    expect(grants).toBe(2);
    expect(seen.filter((r) => r.url !== FCM_TOKEN_URL).map((r) => r.headers.get("authorization"))).toEqual([
      "Bearer token-1",
      "Bearer token-2",
      "Bearer token-2",
    ]);
    const jobs = queuedPushes();
    await personObject(bob.id).receiveTrustRequest(1, "x", Date.now());
    await settle();
    expect(jobs).toEqual([]);
  });
});

describe("APNs (token-based)", () => {
  it("an ES256 provider token (kid, iss, iat; reused), the documented headers, an alert with no text of ours", async () => {
    const bob = await newPerson("iPhone");
    const token = "ab".repeat(32);
    const seen = pushServices(() => new Response(null, { status: 200, headers: { "apns-id": crypto.randomUUID() } }));
    const production = { kind: "apns" as const, token, topic: "com.example.privacy", sandbox: false };
    await runJob(jobFor(bob, production, "trust_request", 9));
    await runJob(jobFor(bob, { ...production, sandbox: true }, "chat", 10));
    expect(seen.map((request) => `${request.method} ${request.url}`)).toEqual([
      `POST https://api.push.apple.com/3/device/${token}`,
      `POST https://api.sandbox.push.apple.com/3/device/${token}`,
    ]);
    const [first, second] = seen as [Seen, Seen];
    expect(Object.fromEntries([...first.headers].filter(([name]) => name !== "authorization"))).toEqual({
      "apns-topic": "com.example.privacy",
      "apns-push-type": "alert",
      "apns-priority": "10",
      "apns-collapse-id": "trust_request",
      "apns-expiration": expect.stringMatching(/^\d+$/),
      "content-type": "application/json",
    });
    const expiration = Number(first.headers.get("apns-expiration")) - Date.now() / 1000;
    expect(Math.abs(expiration - PUSH_TTL_SECONDS)).toBeLessThan(60);
    expect(JSON.parse(first.body)).toEqual({
      aps: { alert: { "loc-key": "PUSH_TRUST_REQUEST" }, "mutable-content": 1, sound: "default" },
      type: "trust_request",
      id: 9,
    });
    expect(second.headers.get("apns-collapse-id")).toBe("chat");

    const bearer = /^bearer (.+)$/.exec(first.headers.get("authorization")!)![1]!;
    expect(second.headers.get("authorization")).toBe(`bearer ${bearer}`); // reused (≤ 1 h)
    const jwt = await readJwt(bearer, await publicKeyOf(env.APNS_KEY!, "ES256"), { name: "ECDSA", hash: "SHA-256" });
    expect(jwt.verified).toBe(true);
    expect(jwt.header).toEqual({ typ: "JWT", alg: "ES256", kid: env.APNS_KEY_ID });
    expect(Object.keys(jwt.claims).sort()).toEqual(["iat", "iss"]);
    expect(jwt.claims.iss).toBe(env.APNS_TEAM_ID);
    expect(Math.abs((jwt.claims.iat as number) - Date.now() / 1000)).toBeLessThan(60);
  });

  it("410 Unregistered removes the registration; 500 is retried", async () => {
    const bob = await newPerson("Deleted app");
    const target = { kind: "apns" as const, token: "cd".repeat(32), topic: "com.example.privacy", sandbox: false };
    await register(bob, target);
    const answers = [
      json({ reason: "InternalServerError" }, 500),
      json({ reason: "Unregistered", timestamp: Date.now() }, 410),
    ];
    pushServices(() => answers.shift()!);
    expect((await runJob(jobFor(bob, target), 1)).retryDelays).toEqual([2]);
    expect((await runJob(jobFor(bob, target), 2)).explicitAcks).toEqual(["msg-1"]);
    const jobs = queuedPushes();
    await personObject(bob.id).receiveTrustRequest(1, "x", Date.now());
    await settle();
    expect(jobs).toEqual([]);
  });
});

describe("provider tokens: one for a burst, renewed no more often than Apple allows", () => {
  afterEach(() => vi.useRealTimers());
  const iphone = (n: number) =>
    ({ kind: "apns", token: n.toString(16).padStart(64, "0"), topic: "com.example.privacy", sandbox: false }) as const;

  it("APNs: a chat waking five iPhones at once sends five pushes under one provider token", async () => {
    const bob = await newPerson("Five iPhones");
    const seen = pushServices(() => new Response(null, { status: 200 }));
    const results = await Promise.all([1, 2, 3, 4, 5].map((n) => runJob(jobFor(bob, iphone(n)))));
    expect(results.map((result) => result.explicitAcks)).toEqual(Array(5).fill(["msg-1"]));
    expect(seen).toHaveLength(5);
    expect(new Set(seen.map((request) => request.headers.get("authorization"))).size).toBe(1);
  });

  it("APNs: a provider token refused within 20 minutes of its making is not renewed (the push is dropped); past 20, it is", async () => {
    const bob = await newPerson("Refused token");
    const seen = pushServices(() =>
      seen.length <= 3 ? json({ reason: "InvalidProviderToken" }, 403) : new Response(null, { status: 200 }),
    );
    // Apple refuses renewals more often than every 20 minutes for the whole team: a young token refused
    // is the deployment's key or ids, and a new one would be refused too.
    expect((await runJob(jobFor(bob, iphone(1)), 1)).explicitAcks).toEqual(["msg-1"]);
    expect((await runJob(jobFor(bob, iphone(2)), 1)).explicitAcks).toEqual(["msg-1"]);
    const [first, second] = seen.map((request) => request.headers.get("authorization"));
    expect(second).toBe(first);
    vi.useFakeTimers({ toFake: ["Date"] });
    vi.setSystemTime(Date.now() + 21 * 60_000);
    expect((await runJob(jobFor(bob, iphone(3)), 1)).retryDelays).toEqual([2]);
    expect((await runJob(jobFor(bob, iphone(3)), 2)).explicitAcks).toEqual(["msg-1"]);
    const [, , third, renewed] = seen.map((request) => request.headers.get("authorization"));
    expect(third).toBe(first);
    expect(renewed).not.toBe(first);
  });

  it("FCM: pushes at once ask Google's token endpoint once, not once each", async () => {
    const bob = await newPerson("Five Androids");
    let grants = 0;
    const seen = pushServices((request) => {
      if (request.url !== FCM_TOKEN_URL) return json({ name: "projects/privacy-test/messages/0:1" });
      grants++;
      return json({ access_token: `ya29.token-${grants}`, expires_in: 3599 });
    });
    const results = await Promise.all(
      [1, 2, 3, 4, 5].map((n) => runJob(jobFor(bob, { kind: "fcm", token: `fcm-token:burst-${n}` }))),
    );
    expect(results.map((result) => result.explicitAcks)).toEqual(Array(5).fill(["msg-1"]));
    expect(seen.filter((request) => request.url !== FCM_TOKEN_URL)).toHaveLength(5);
    expect(grants).toBe(1);
  });
});

describe("a refusal that calls the address itself dead removes the registration, as Apple and Google ask", () => {
  /** Whether `who` is still woken: a trust request queues a push for them, or nothing. */
  async function stillWoken(who: Person) {
    const jobs = queuedPushes();
    await personObject(who.id).receiveTrustRequest(1, "x", Date.now());
    await settle();
    return jobs.length > 0;
  }

  const cases: [string, Job["target"], () => Response][] = [
    [
      "APNs 400 BadDeviceToken",
      { kind: "apns", token: "ef".repeat(32), topic: "com.example.privacy", sandbox: false },
      () => json({ reason: "BadDeviceToken" }, 400),
    ],
    [
      "APNs 400 DeviceTokenNotForTopic",
      { kind: "apns", token: "fe".repeat(32), topic: "com.example.privacy", sandbox: false },
      () => json({ reason: "DeviceTokenNotForTopic" }, 400),
    ],
    [
      "FCM 400 INVALID_ARGUMENT about the registration token",
      { kind: "fcm", token: "fcm-token:not-a-token" },
      () =>
        json(
          {
            error: {
              code: 400,
              message: "The registration token is not a valid FCM registration token",
              status: "INVALID_ARGUMENT",
              details: [
                { "@type": "type.googleapis.com/google.firebase.fcm.v1.FcmError", errorCode: "INVALID_ARGUMENT" },
              ],
            },
          },
          400,
        ),
    ],
    [
      "FCM 403 SENDER_ID_MISMATCH",
      { kind: "fcm", token: "fcm-token:another-app" },
      () =>
        json(
          {
            error: {
              code: 403,
              message: "SenderId mismatch",
              status: "PERMISSION_DENIED",
              details: [
                { "@type": "type.googleapis.com/google.firebase.fcm.v1.FcmError", errorCode: "SENDER_ID_MISMATCH" },
              ],
            },
          },
          403,
        ),
    ],
  ];
  for (const [name, target, refusal] of cases) {
    it(`${name}: removed`, async () => {
      const bob = await newPerson("Dead address");
      await register(bob, target);
      pushServices((request) =>
        request.url === FCM_TOKEN_URL ? json({ access_token: "ya29.dead", expires_in: 3599 }) : refusal(),
      );
      expect((await runJob(jobFor(bob, target))).explicitAcks).toEqual(["msg-1"]);
      expect(await stillWoken(bob)).toBe(false);
    });
  }

  it("a removal that fails is logged and the push is done: acknowledged, never retried towards the dead letters", async () => {
    const bob = await newPerson("Removal fails");
    const target = { kind: "apns" as const, token: "bb".repeat(32), topic: "com.example.privacy", sandbox: false };
    await register(bob, target);
    pushServices(() => json({ reason: "Unregistered" }, 410));
    vi.spyOn(PersonObject.prototype, "changePush").mockRejectedValue(new Error("the object is overloaded"));
    const result = await runJob(jobFor(bob, target));
    expect(result.explicitAcks).toEqual(["msg-1"]);
    expect(result.retryDelays ?? []).toEqual([]);
  });

  it("another refusal (a 400 about the message, not the address) leaves the registration", async () => {
    const bob = await newPerson("Bad payload");
    const target = { kind: "apns" as const, token: "aa".repeat(32), topic: "com.example.privacy", sandbox: false };
    await register(bob, target);
    pushServices(() => json({ reason: "PayloadTooLarge" }, 413));
    expect((await runJob(jobFor(bob, target))).explicitAcks).toEqual(["msg-1"]);
    expect(await stillWoken(bob)).toBe(true);
  });
});
