// `npm run bench -- --stream`: the live stream (docs/realtime.md) under idle load.
//
// 1. 1,000 people, each with a person token, are written straight into the bench's D1
//    (the demo world's Alice and Bob are the sender and the receiver);
// 2. the isolate's heap is read after a full collection (through workerd's inspector), each of
//    the 1,000 people opens one stream (`ws`), and, once their objects have had the time to
//    hibernate (15 s; workerd evicts an idle object with open sockets after about 10 s), the
//    heap is read again, with workerd's resident memory before and after;
// 3. Alice sends Bob `CHATS` chats, one after another (POST /apps/buzz/activity): each is
//    timed from just before Alice's request to the frame on Bob's socket; p50 and p99.
// The chat POST's own time (to its 200) is given beside it. `npm run bench -- --smoke` runs it
// with a few sockets and chats and no wait (`sizes`), to check that it still runs.
import { createHash, randomUUID } from "node:crypto";
import WebSocket from "ws";

/** Idle sockets, chats, and the wait for the idle objects to hibernate. */
const SIZES = { idle: 1000, chats: 200, hibernateMs: 15_000 };
const ALICE = { id: 1, token: "pk_demo_alice" };
const BOB = { id: 2, token: "pk_demo_bob" };

const sleep = (/** @type {number} */ ms) => new Promise((resolve) => setTimeout(resolve, ms));
const sha256 = (/** @type {string} */ text) => createHash("sha256").update(text).digest("hex");
const percentile = (/** @type {number[]} */ sorted, /** @type {number} */ p) =>
  sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? NaN;

/** Opens one stream; resolves once it is open. */
function open(/** @type {string} */ wsUrl, /** @type {string} */ token) {
  const ws = new WebSocket(`${wsUrl}/apps/buzz/stream`, { headers: { Authorization: `Bearer ${token}` } });
  return new Promise((resolve, reject) => {
    ws.once("open", () => resolve(ws));
    ws.once("unexpected-response", (_, res) => reject(new Error(`the stream answered ${res.statusCode}`)));
    ws.once("error", reject);
  });
}

/**
 * @param {{ url: string, db: D1Database, heap: (() => Promise<number>) | null,
 *   rss: () => { mib: number } | null, say: (line: string) => void,
 *   sizes?: { idle: number, chats: number, hibernateMs: number } }} options
 */
export async function streamScenario({ url, db, heap, rss, say, sizes = SIZES }) {
  const { idle: IDLE_CONNECTIONS, chats: CHATS, hibernateMs: HIBERNATE_WAIT_MS } = sizes;
  const wsUrl = url.replace(/^http/, "ws");
  const tokens = Array.from({ length: IDLE_CONNECTIONS }, (_, i) => `pk_bench_stream_${i}_${randomUUID().slice(0, 8)}`);
  // People and tokens in chunks (D1 binds at most 100 parameters a statement).
  for (let first = 0; first < IDLE_CONNECTIONS; first += 25) {
    const chunk = tokens.slice(first, first + 25);
    const ids = [];
    for (const [i] of chunk.entries()) {
      const row = await db
        .prepare("INSERT INTO people (first_name, last_name, created_at, updated_at) VALUES (?, ?, ?, ?) RETURNING id")
        .bind("Idle", `Listener ${first + i}`, Date.now(), Date.now())
        .first();
      ids.push(Number(row?.id));
    }
    await db.batch(
      chunk.map((token, i) =>
        db
          .prepare(
            "INSERT INTO access_tokens (token_hash, prefix, person_id, scopes, created_at) VALUES (?, ?, ?, '[]', ?)",
          )
          .bind(sha256(token), token.slice(0, 8), ids[i], Date.now()),
      ),
    );
  }

  const heapBefore = heap ? await heap() : null;
  const rssBefore = rss();
  const sockets = [];
  const openStarted = performance.now();
  for (let first = 0; first < IDLE_CONNECTIONS; first += 50) {
    sockets.push(...(await Promise.all(tokens.slice(first, first + 50).map((token) => open(wsUrl, token)))));
  }
  const openMs = performance.now() - openStarted;
  await sleep(HIBERNATE_WAIT_MS);
  const heapIdle = heap ? await heap() : null;
  const rssIdle = rss();

  // Bob listens; Alice sends.
  const bob = /** @type {WebSocket} */ (await open(wsUrl, BOB.token));
  /** @type {((at: number) => void) | null} */
  let waiting = null;
  bob.on("message", (data) => {
    if (String(data).startsWith("{") && waiting) waiting(performance.now());
  });
  const frameMs = [];
  const postMs = [];
  for (let i = 0; i < CHATS; i++) {
    const arrived = new Promise((resolve) => (waiting = resolve));
    const started = performance.now();
    const res = await fetch(`${url}/apps/buzz/activity`, {
      method: "POST",
      headers: { Authorization: `Bearer ${ALICE.token}`, "Content-Type": "application/json" },
      body: JSON.stringify({
        type: "chat_message",
        sendable_type: "person",
        sendable_id: ALICE.id,
        receivable_type: "person",
        receivable_id: BOB.id,
        message: "aGk=",
        message_id: randomUUID(),
      }),
    });
    await res.arrayBuffer();
    if (res.status !== 200) throw new Error(`the chat answered ${res.status}`);
    postMs.push(performance.now() - started);
    frameMs.push(/** @type {number} */ (await arrived) - started);
  }
  const stillOpen = sockets.filter((ws) => ws.readyState === WebSocket.OPEN).length;
  for (const ws of [...sockets, bob]) ws.terminate();

  const sorted = (/** @type {number[]} */ list) => [...list].sort((a, b) => a - b);
  const frames = sorted(frameMs);
  const posts = sorted(postMs);
  const mib = (/** @type {number} */ bytes) => `${(bytes / 1024 ** 2).toFixed(1)} MiB`;
  say(
    `Live stream: ${IDLE_CONNECTIONS} idle connections (one per person) opened in ${(openMs / 1000).toFixed(1)} s; ${stillOpen} still open after the chats.`,
  );
  say(
    `  chat, sender's request → receiver's frame (${CHATS} chats, one at a time): p50 ${percentile(frames, 50).toFixed(1)} ms, ` +
      `p99 ${percentile(frames, 99).toFixed(1)} ms; the POST alone: p50 ${percentile(posts, 50).toFixed(1)} ms, p99 ${percentile(posts, 99).toFixed(1)} ms`,
  );
  if (heapBefore !== null && heapIdle !== null) {
    say(
      `  the Worker's isolate heap (used, after a full collection): ${mib(heapBefore)} before, ${mib(heapIdle)} with ` +
        `${IDLE_CONNECTIONS} idle connections ${HIBERNATE_WAIT_MS / 1000} s after opening (${mib(heapIdle - heapBefore)} more, ` +
        `${(((heapIdle - heapBefore) / IDLE_CONNECTIONS) | 0).toLocaleString("en-US")} bytes a connection)`,
    );
  }
  if (rssBefore && rssIdle) {
    say(
      `  workerd resident memory: ${rssBefore.mib.toFixed(0)} MiB before, ${rssIdle.mib.toFixed(0)} MiB with the idle connections`,
    );
  }
}
