import { env } from "cloudflare:workers";
import { evictDurableObject, listDurableObjectIds, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { createDb } from "../../src/db/client";
import { accessTokens, memberships, people } from "../../src/db/schema";
import { sha256Hex } from "../../src/lib/crypto";
import { nextId } from "../../src/objects/person/ids";
import { createDeps } from "../../src/services/create-deps";
import { mintStreamTicket, redeemStreamTicket } from "../../src/services/stream";
import { createActivity, createStreamTicket, listActivity, listBlocked } from "../../src/routes/buzz/buzz.routes";
import { listTrustRequests } from "../../src/routes/contacts/contacts.routes";
import { answer, call, expectError, fresh, insertToken, personObject, sendChat } from "../helpers";
import { loadDocument } from "../support/openapi";
import { eq } from "drizzle-orm";

/**
 * The live stream (docs/realtime.md), through the Worker's fetch like a
 * client: `GET /apps/buzz/stream` upgraded to a WebSocket, served by the
 * person's object. Each test makes its own people (object storage is not
 * reset between tests).
 */

type Frame = { type: string; data?: Record<string, unknown> };

async function newPerson(first: string): Promise<{ id: number; token: string; tokenId: number }> {
  const db = createDb(env.DB);
  const [row] = await db.insert(people).values({ firstName: first, lastName: "Stream" }).returning({ id: people.id });
  const token = `pk_${fresh("stream").replaceAll(".", "_")}`;
  await insertToken(token, { personId: row!.id });
  const [t] = await db
    .select({ id: accessTokens.id })
    .from(accessTokens)
    .where(eq(accessTokens.prefix, token.slice(0, 8)))
    .all()
    .then((rows) => rows.slice(-1));
  return { id: row!.id, token, tokenId: t!.id };
}

/** An open stream: every frame it received, and a way to wait for the next ones. */
type Client = {
  ws: WebSocket;
  frames: Frame[];
  until(count: number): Promise<Frame[]>;
  closed: Promise<{ code: number; reason: string }>;
};

async function connect(query: string, token?: string): Promise<Client> {
  const res = await call(`/apps/buzz/stream${query}`, { token, headers: { Upgrade: "websocket" } });
  expect(res.status).toBe(101);
  const ws = res.webSocket!;
  ws.accept();
  const frames: Frame[] = [];
  const waiting: (() => void)[] = [];
  ws.addEventListener("message", (event) => {
    // "pong" answers a "ping"; every event is JSON.
    if (event.data === "pong") return;
    frames.push(JSON.parse(String(event.data)) as Frame);
    for (const wake of waiting) wake();
  });
  const closed = new Promise<{ code: number; reason: string }>((resolve) =>
    ws.addEventListener("close", (event) => resolve({ code: event.code, reason: event.reason })),
  );
  return {
    ws,
    frames,
    closed,
    until: (count) =>
      new Promise((resolve) => {
        const check = () => frames.length >= count && resolve(frames.slice());
        waiting.push(check);
        check();
      }),
  };
}

const chat = sendChat;

/** A call record `who` writes in their own feed: a marker that follows everything sent before it. */
const callRecord = (who: { id: number; token: string }) =>
  call("/apps/buzz/activity", {
    method: "POST",
    token: who.token,
    body: {
      type: "incoming_call_missed",
      sendable_type: "company",
      sendable_id: 1,
      receivable_type: "person",
      receivable_id: who.id,
    },
  }).then(async (res) => (await answer(res, 200, createActivity)).data.id);

const activityIds = (frames: Frame[]) => frames.filter((f) => f.type === "activity").map((f) => f.data!.id);

describe("GET /apps/buzz/stream", () => {
  it("refuses what is not a person's upgrade: no token 401, a service token 403, no Upgrade 426", async () => {
    await expectError(await call("/apps/buzz/stream"), 401, "Unauthorized");
    await expectError(await call("/apps/buzz/stream", { token: "sk_demo_telephony" }), 403, "Forbidden");
    const bob = await newPerson("Plain");
    const plain = await call("/apps/buzz/stream", { token: bob.token });
    await expectError(plain, 426, "Upgrade Required");
    expect(plain.headers.get("Upgrade")).toBe("websocket");
    // An empty `after` (a client's unset variable) is refused too, not read as 0 (the feed from its start).
    for (const after of ["x", ""]) {
      await expectError(
        await call(`/apps/buzz/stream?after=${after}`, { token: bob.token, headers: { Upgrade: "websocket" } }),
        400,
        "Bad Request",
      );
    }
  });

  it("a chat reaches both of the receiver's connections once, as GET /activity shows it, and the sender's too", async () => {
    const alice = await newPerson("Alice");
    const bob = await newPerson("Bob");
    const [phone, laptop, sender] = [
      await connect("", bob.token),
      await connect("", bob.token),
      await connect("", alice.token),
    ];
    const id = await chat(alice, bob.id);
    const marker = await callRecord(bob);
    for (const socket of [phone, laptop]) expect(activityIds(await socket.until(2))).toEqual([id, marker]);
    const [listed] = await answer(
      await call(`/apps/buzz/activity/${id - 1}?limit=1`, { token: bob.token }),
      200,
      listActivity,
    );
    expect(phone.frames[0]).toEqual({ type: "activity", data: listed });
    // The sender's own device sees its copy (GET /activity's shape for Alice).
    const [own] = await answer(
      await call(`/apps/buzz/activity/${id - 1}?limit=1`, { token: alice.token }),
      200,
      listActivity,
    );
    expect((await sender.until(1))[0]).toEqual({ type: "activity", data: own });
  });

  it("shows the other party's names when GET /activity does (they share a company)", async () => {
    const alice = await newPerson("Named");
    const bob = await newPerson("Coworker");
    await createDb(env.DB)
      .insert(memberships)
      .values([
        { companyId: 2, personId: alice.id },
        { companyId: 2, personId: bob.id },
      ]);
    const socket = await connect("", bob.token);
    const id = await chat(alice, bob.id);
    const [frame] = await socket.until(1);
    expect(frame!.data!.sendable).toEqual({
      id: alice.id,
      first_name: "Named",
      middle_name: null,
      last_name: "Stream",
    });
    const [listed] = await answer(
      await call(`/apps/buzz/activity/${id - 1}?limit=1`, { token: bob.token }),
      200,
      listActivity,
    );
    expect(frame!.data).toEqual(listed);
  });

  it("a read indicator reaches both connections once", async () => {
    const alice = await newPerson("Reader");
    const bob = await newPerson("Writer");
    const [one, two] = [await connect("", bob.token), await connect("", bob.token)];
    const read = await chat(alice, bob.id, "chat_read_indicator");
    const marker = await callRecord(bob);
    for (const socket of [one, two]) {
      const frames = await socket.until(2);
      expect(activityIds(frames)).toEqual([read, marker]);
      expect(frames[0]!.data!.type).toBe("chat_read_indicator");
    }
  });

  it("a stream opened while the person's own chat is on its way still gets that chat, then what landed after it", async () => {
    const alice = await newPerson("Alice");
    await callRecord(alice);
    // Alice's chat has reserved its id and waits for the receiver (Feed.sendChat): held here by hand.
    const reserved = await runInDurableObject(personObject(alice.id), (instance) => {
      const feed = (instance as unknown as { feed: { reserved: Set<number>; newest(): number } }).feed;
      const id = nextId(alice.id, feed.newest());
      feed.reserved.add(id);
      return id;
    });
    const marker = await callRecord(alice); // lands above the reservation
    expect(marker).toBeGreaterThan(reserved);
    const socket = await connect("", alice.token);
    // The receiver answered: the chat is stored at its id, and the reservation goes.
    await runInDurableObject(personObject(alice.id), (instance, state) => {
      state.storage.sql.exec(
        `INSERT INTO feed (id, type, sendable_type, sendable_id, receivable_type, receivable_id, message, created_at)
         VALUES (?, 'chat_message', 'person', ?, 'person', 1, 'on its way', ?)`,
        reserved,
        alice.id,
        Date.now(),
      );
      const held = instance as unknown as { feed: { reserved: Set<number> }; stream: { pump(): void } };
      held.feed.reserved.delete(reserved);
      held.stream.pump();
    });
    expect(activityIds(await socket.until(2))).toEqual([reserved, marker]);
  });

  it("resumes after a disconnect with nothing missed and nothing repeated", async () => {
    const alice = await newPerson("Resumer");
    const bob = await newPerson("Away");
    const first = await connect("", bob.token);
    const a = await chat(alice, bob.id);
    const b = await chat(alice, bob.id);
    expect(activityIds(await first.until(2))).toEqual([a, b]);
    first.ws.close(1000, "bye");
    const c = await chat(alice, bob.id);
    const d = await chat(alice, bob.id);
    const again = await connect(`?after=${b}`, bob.token);
    expect(activityIds(await again.until(2))).toEqual([c, d]);
    const e = await chat(alice, bob.id);
    expect(activityIds(await again.until(3))).toEqual([c, d, e]);
    // From the start: everything, once.
    const all = await connect("?after=0", bob.token);
    expect(activityIds(await all.until(5))).toEqual([a, b, c, d, e]);
  });

  it("sends `resync` after 500 missed records", async () => {
    const bob = await newPerson("Busy");
    const rows = Array.from({ length: 501 }, (_, i) => ({
      id: 1000 + i,
      type: "incoming_call_missed" as const,
      sendableType: "company" as const,
      sendableId: 1,
      receivableType: "person" as const,
      receivableId: bob.id,
      callTime: 0,
      message: null,
      messageId: null,
      createdAt: Date.now(),
    }));
    await personObject(bob.id).importRows({ feed: rows });
    const socket = await connect("?after=0", bob.token);
    const frames = await socket.until(501);
    expect(activityIds(frames)).toHaveLength(500);
    expect(frames[500]).toEqual({ type: "resync" });
    const marker = await callRecord(bob);
    expect(activityIds(await socket.until(502)).at(-1)).toBe(marker);
  });

  it("sends trust requests, contact changes and blocked calls", async () => {
    const alice = await newPerson("Asker");
    const bob = await newPerson("Asked");
    const socket = await connect("", bob.token);
    const asked = await call("/contacts/requests", {
      method: "POST",
      token: alice.token,
      body: { user_id: bob.id, contact_reason: "hello" },
    });
    expect(asked.status).toBeLessThan(300);
    // The request is delivered after the answer: its event comes first, then what follows.
    await socket.until(1);
    const synced = await call("/contacts/sync", {
      method: "POST",
      token: bob.token,
      body: [{ display_name: "X", phone_numbers: ["+14155550123"] }],
    });
    expect(synced.status).toBe(200);
    const at = Date.now();
    await personObject(bob.id).recordBlockedCalls([
      { callerId: null, countryCode: "1", phoneNumber: "4155550123", createdAt: at },
      { callerId: null, countryCode: "1", phoneNumber: "4155550123", createdAt: at },
    ]);
    const frames = await socket.until(4);
    const requests = await answer(await call("/contacts/requests", { token: bob.token }), 200, listTrustRequests);
    expect(frames[0]).toEqual({ type: "trust_request", data: requests[0] });
    expect(frames[1]!.type).toBe("contacts");
    expect(Date.parse(String(frames[1]!.data!.updated_at))).toBeGreaterThan(Date.now() - 60_000);
    // Two calls alike but for their own ids, the same in the list (newest first) and the events.
    const blocked = await answer(await call("/apps/buzz/blocked", { token: bob.token }), 200, listBlocked);
    expect(frames.slice(2)).toEqual([
      { type: "blocked_call", data: blocked[1] },
      { type: "blocked_call", data: blocked[0] },
    ]);
    expect(blocked[0]!.blocked_call_id).toBeGreaterThan(blocked[1]!.blocked_call_id);
  });

  it("a trust request delivered twice, or an older ask landing after a newer one, sends one event", async () => {
    const alice = await newPerson("Asker");
    const bob = await newPerson("Asked");
    const socket = await connect("", bob.token);
    const card = {
      id: alice.id,
      first_name: "Asker",
      middle_name: null,
      last_name: "Stream",
      companies: [],
      version: 1,
    };
    const at = Date.now();
    await personObject(bob.id).receiveTrustRequest(alice.id, "the newer ask", at, card);
    await personObject(bob.id).receiveTrustRequest(alice.id, "the newer ask", at, card); // the same delivery again
    await personObject(bob.id).receiveTrustRequest(alice.id, "an older ask", at - 60_000, card); // late
    // A call record after them: every event before it has arrived by the time it does.
    await callRecord(bob);
    const frames = await socket.until(2);
    expect(frames.map((frame) => frame.type)).toEqual(["trust_request", "activity"]);
    expect(frames[0]!.data).toMatchObject({ contact_reason: "the newer ask" });
    socket.ws.close();
  });

  it("an idle socket schedules no alarm: nothing checks its token on a timer", async () => {
    const idle = await newPerson("Idle");
    const socket = await connect("", idle.token);
    const stub = personObject(idle.id);
    // A new person's object has written nothing, so only a socket could have asked for an alarm.
    expect(await runInDurableObject(stub, async (_, state) => state.storage.getAlarm())).toBeNull();
    expect(socket.ws.readyState).toBe(WebSocket.OPEN);
    socket.ws.close();
  });

  it("a socket whose token expires closes at that time (its one alarm), with 4001", async () => {
    const brief = await newPerson("Brief");
    const token = `pk_${fresh("expiring").replaceAll(".", "_")}`;
    const expiresAt = new Date(Date.now() + 60_000);
    await insertToken(token, { personId: brief.id, expiresAt });
    const socket = await connect("", token);
    const kept = await connect("", brief.token);
    const stub = personObject(brief.id);
    expect(await runInDurableObject(stub, async (_, state) => state.storage.getAlarm())).toBe(expiresAt.getTime());
    // Not yet: the alarm leaves it open.
    await runDurableObjectAlarm(stub);
    expect(socket.ws.readyState).toBe(WebSocket.OPEN);
    // At its expiry (as the alarm sees it): closed, and the other token's socket stays.
    await runInDurableObject(stub, async (instance) => {
      (instance as unknown as { stream: { closeExpired(now: number): number | null } }).stream.closeExpired(
        expiresAt.getTime(),
      );
    });
    expect(await socket.closed).toEqual({ code: 4001, reason: "the token of this connection is no longer valid" });
    expect(kept.ws.readyState).toBe(WebSocket.OPEN);
    kept.ws.close();
  });

  it("closes the connections of a person whose account is erased", async () => {
    const gone = await newPerson("Erased");
    const socket = await connect("", gone.token);
    await personObject(gone.id).erase();
    expect((await socket.closed).code).toBe(4001);
  });

  it("is in the OpenAPI document as a 101 upgrade", async () => {
    const doc = await loadDocument();
    expect(Object.keys(doc.paths["/apps/buzz/stream"]!.get!.responses)).toEqual(
      expect.arrayContaining(["101", "401", "426"]),
    );
  });

  it("an 11th connection closes the oldest", async () => {
    const bob = await newPerson("Many");
    const sockets: Client[] = [];
    for (let i = 0; i < 10; i++) sockets.push(await connect("", bob.token));
    const eleventh = await connect("", bob.token);
    expect(await sockets[0]!.closed).toEqual({
      code: 4000,
      reason: "more than 10 connections of this person: the oldest is closed",
    });
    const marker = await callRecord(bob);
    for (const socket of [...sockets.slice(1), eleventh]) expect(activityIds(await socket.until(1))).toEqual([marker]);
    expect(activityIds(sockets[0]!.frames)).toEqual([]);
  });

  it("a hibernated object wakes for a chat; the socket answers ping without waking it", async () => {
    const alice = await newPerson("Waker");
    const bob = await newPerson("Sleeper");
    const socket = await connect("", bob.token);
    const stub = personObject(bob.id);
    await evictDurableObject(stub);
    const pong = new Promise((resolve) =>
      socket.ws.addEventListener("message", (e) => resolve(e.data), { once: true }),
    );
    socket.ws.send("ping");
    expect(await pong).toBe("pong");
    socket.frames.length = 0;
    const id = await chat(alice, bob.id);
    expect(activityIds(await socket.until(1))).toEqual([id]);
  });

  it("a chat retried after its first attempt reached the receiver reaches the sender's other devices too", async () => {
    const alice = await newPerson("Retrier");
    const bob = await newPerson("Receiver");
    const messageId = crypto.randomUUID();
    // The first attempt: Bob's object stored the chat, then Alice's object lost the request (a restart).
    await personObject(bob.id).acceptChat({
      id: nextId(alice.id, 0),
      type: "chat_message",
      sendableType: "person",
      sendableId: alice.id,
      receivableType: "person",
      receivableId: bob.id,
      callTime: 0,
      message: "aGk=",
      messageId,
      createdAt: new Date(),
    } as never);
    // Alice's laptop streams; her phone records a call meanwhile, then retries the chat with its message_id.
    const laptop = await connect("", alice.token);
    const marker = await callRecord(alice);
    expect(activityIds(await laptop.until(1))).toEqual([marker]);
    const chatId = await chat(alice, bob.id, "chat_message", messageId);
    expect(chatId).toBeGreaterThan(marker);
    expect(activityIds(await laptop.until(2))).toEqual([marker, chatId]);
    const paged = await answer(await call(`/apps/buzz/activity/${marker}`, { token: alice.token }), 200, listActivity);
    expect(paged.map((row) => row.id)).toEqual([chatId]);
    laptop.ws.close();
  });

  it("an erased person's object refuses a stream (the Worker's passing device check may be a second old)", async () => {
    const bob = await newPerson("Erased");
    await callRecord(bob);
    await personObject(bob.id).erase();
    const url = new URL("https://person.internal/stream");
    url.searchParams.set("connect", JSON.stringify({ me: bob.id, tokenId: bob.tokenId, backlog: null }));
    const res = await personObject(bob.id).fetch(new Request(url, { headers: { Upgrade: "websocket" } }));
    expect(res.status).toBe(401);
  });
});

/* ---------- tickets (docs/realtime.md, "From a browser: a ticket"; docs/security.md, "Stream tickets") ---------- */

describe("stream tickets", () => {
  const mint = async (who: { token: string }) => {
    const minted = await call("/apps/buzz/stream/tickets", { method: "POST", token: who.token });
    return (await answer(minted, 201, createStreamTicket)).ticket;
  };
  const upgrade = (ticket: string) => call(`/apps/buzz/stream?ticket=${ticket}`, { headers: { Upgrade: "websocket" } });
  /** The person objects that exist (have storage), as the audit counted them on disk. */
  const objectCount = async () => (await listDurableObjectIds(env.PERSON)).length;
  /** The tickets person `personId`'s object remembers. */
  const ticketsHeld = (personId: number) =>
    runInDurableObject(
      personObject(personId),
      (_, state) => [...state.storage.kv.list({ prefix: "stream-ticket:" })].length,
    );

  it("a fresh ticket opens one connection, once; it needs no header", async () => {
    const alice = await newPerson("Ticketer");
    const bob = await newPerson("Browser");
    const ticket = await mint(bob);
    expect(ticket).toMatch(/^st_\d+\.\d+\.\d+\.[\w-]{22}\.[\w-]{43}$/);
    const socket = await connect(`?ticket=${ticket}`);
    const id = await chat(alice, bob.id);
    expect(activityIds(await socket.until(1))).toEqual([id]);
    await expectError(await upgrade(ticket), 401, "Unauthorized");
  });

  const b64url = (n: number) =>
    btoa(String.fromCharCode(...crypto.getRandomValues(new Uint8Array(n))))
      .replaceAll("+", "-")
      .replaceAll("/", "_")
      .replace(/=+$/, "");

  it("a ticket nobody minted is 401 and creates no object (the audit's reproduction)", async () => {
    const before = await objectCount();
    // The audit's five upgrades: a random person id and a random secret each.
    for (let i = 0; i < 5; i++) {
      const ticket = `st_${900_000 + Math.floor(Math.random() * 99_999)}_${b64url(32)}`;
      await expectError(await upgrade(ticket), 401, "Unauthorized");
    }
    // The audit counted five new objects on disk here.
    expect(await objectCount()).toBe(before);
  });

  it("a forged or altered ticket is 401, addresses no object and writes nothing", async () => {
    const bob = await newPerson("Forged");
    const real = await mint(bob);
    const before = { objects: await objectCount(), held: await ticketsHeld(bob.id) };
    const [, tokenId, expires, nonce, mac] = /^st_\d+\.(\d+)\.(\d+)\.([\w-]+)\.([\w-]+)$/.exec(real)!;
    const forged = [
      // The ticket's shape, nobody's signature: for a person with no object, and for Bob.
      `st_987654.${tokenId}.${expires}.${b64url(16)}.${b64url(32)}`,
      `st_${bob.id}.${tokenId}.${expires}.${b64url(16)}.${b64url(32)}`,
      // Bob's real ticket moved to another person, to another token, later, or with its MAC altered.
      `st_987655.${tokenId}.${expires}.${nonce}.${mac}`,
      `st_${bob.id}.${Number(tokenId) + 1}.${expires}.${nonce}.${mac}`,
      `st_${bob.id}.${tokenId}.${Number(expires) + 1}.${nonce}.${mac}`,
      `st_${bob.id}.${tokenId}.${expires}.${nonce}.${mac!.slice(0, -2)}${mac!.endsWith("AA") ? "BA" : "AA"}`,
      // Not a ticket at all.
      "st_",
      "x".repeat(200),
    ];
    for (const ticket of forged) await expectError(await upgrade(ticket), 401, "Unauthorized");
    expect(await objectCount()).toBe(before.objects);
    expect(await ticketsHeld(bob.id)).toBe(before.held);
    // None of them spent Bob's real ticket.
    const socket = await connect(`?ticket=${real}`);
    socket.ws.close();
  });

  it("a ticket minted before its token was revoked does not open a stream afterwards", async () => {
    const bob = await newPerson("Revoker");
    const ticket = await mint(bob);
    // As `npm run token -- revoke` does: D1, then the token's record in KV.
    await createDb(env.DB).update(accessTokens).set({ revokedAt: new Date() }).where(eq(accessTokens.id, bob.tokenId));
    await env.TRUST_INDEX.put(
      `tok:${await sha256Hex(bob.token)}`,
      JSON.stringify({ v: 1, refused: "the bearer token has been revoked" }),
    );
    expect(await expectError(await upgrade(ticket), 401, "Unauthorized")).toMatch(/no longer valid/);
  });

  it("a ticket minted before its device signed out (DELETE /me/devices/{id}) does not open a stream", async () => {
    const bob = await newPerson("Signer");
    const ticket = await mint(bob);
    const signedOut = await call(`/me/devices/${bob.tokenId}`, { method: "DELETE", token: bob.token });
    expect(signedOut.status).toBe(204);
    await expectError(await upgrade(ticket), 401, "Unauthorized");
  });

  it("an expired ticket is 401; without STREAM_TICKET_KEY minting and redeeming are a 503 naming it", async () => {
    const bob = await newPerson("Late");
    const deps = createDeps(env);
    const old = await mintStreamTicket(deps, bob.id, bob.tokenId, bob.token, new Date(Date.now() - 61_000));
    await expectError(await upgrade(old.ticket), 401, "Unauthorized");
    const unkeyed = { ...deps, streamTicketKey: undefined };
    const fresh = await mint(bob);
    for (const attempt of [
      mintStreamTicket(unkeyed, bob.id, bob.tokenId, bob.token, new Date()),
      redeemStreamTicket(unkeyed, fresh, new Date()),
    ]) {
      await expect(attempt).rejects.toMatchObject({
        statusCode: 503,
        detail: expect.stringMatching(/STREAM_TICKET_KEY/),
      });
    }
  });
});
