// `npm run test:stream -- [--url http://127.0.0.1:8793]`: the live stream (docs/realtime.md)
// against a running `npm run dev`, with a real WebSocket client (`ws`), as the demo world's
// Alice and Bob. Checks: a chat and a read indicator reach both of Bob's connections once;
// a resume after a disconnect misses nothing and repeats nothing; a ticket works once; an 11th
// connection closes the oldest; an object left idle until it hibernates wakes for a chat; a
// device deleted by another device closes its connection at once (close code 4001). Prints each
// check; exits 1 on the first failure.
import { execFileSync } from "node:child_process";
import { randomUUID } from "node:crypto";
import WebSocket from "ws";
import { parseArgs } from "./lib/cli.mjs";

const { flags } = parseArgs(process.argv.slice(2), {
  options: ["url"],
  usage: "Usage: npm run test:stream -- [--url http://127.0.0.1:8793] (a running npm run dev; docs/realtime.md)",
});
const base = (flags.url ?? "http://127.0.0.1:8793").replace(/\/$/, "");
const wsBase = base.replace(/^http/, "ws");
const ALICE = { id: 1, token: "pk_demo_alice" };
const BOB = { id: 2, token: "pk_demo_bob" };

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
/** Polls `done` every 50 ms for at most `ms`. */
async function until(done, ms) {
  for (const end = Date.now() + ms; !done() && Date.now() < end;) await sleep(50);
}

function check(ok, what) {
  if (!ok) {
    console.error(`FAIL ${what}`);
    process.exit(1);
  }
  console.log(`ok   ${what}`);
}

/** Opens the stream; collects its JSON frames; `until(n)` waits for n of them (10 s at most). */
function open(query = "", token = BOB.token) {
  const headers = token ? { Authorization: `Bearer ${token}` } : {};
  const ws = new WebSocket(`${wsBase}/apps/buzz/stream${query}`, { headers });
  const frames = [];
  const wake = new Set();
  ws.on("message", (data) => {
    if (String(data) === "pong") return;
    frames.push(JSON.parse(String(data)));
    for (const fn of wake) fn();
  });
  const closed = new Promise((resolve) => ws.on("close", (code, reason) => resolve({ code, reason: String(reason) })));
  const opened = new Promise((resolve, reject) => {
    ws.on("open", resolve);
    ws.on("unexpected-response", (_, res) => reject(new Error(`HTTP ${res.statusCode}`)));
    ws.on("error", reject);
  });
  const until = (n) =>
    new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`${frames.length} of ${n} frames after 10 s`)), 10_000);
      const fn = () => {
        if (frames.length < n) return;
        clearTimeout(timer);
        wake.delete(fn);
        resolve(frames.slice());
      };
      wake.add(fn);
      fn();
    });
  return { ws, frames, until, closed, opened };
}

async function post(path, token, body) {
  const res = await fetch(base + path, {
    method: "POST",
    headers: { Authorization: `Bearer ${token}`, "Content-Type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (!res.ok) throw new Error(`POST ${path}: ${res.status} ${await res.text()}`);
  return res.json();
}

const chat = async (type = "chat_message") =>
  (
    await post("/apps/buzz/activity", ALICE.token, {
      type,
      sendable_type: "person",
      sendable_id: ALICE.id,
      receivable_type: "person",
      receivable_id: BOB.id,
      message: "aGk=",
      message_id: randomUUID(),
    })
  ).data.id;

/** A call record Bob writes in his own feed: it follows everything sent before it. */
const marker = async (token = BOB.token, id = BOB.id) =>
  (
    await post("/apps/buzz/activity", token, {
      type: "incoming_call_missed",
      sendable_type: "company",
      sendable_id: 1,
      receivable_type: "person",
      receivable_id: id,
    })
  ).data.id;

const ids = (frames) => frames.filter((f) => f.type === "activity").map((f) => f.data.id);
const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);

// 1. A chat and a read indicator reach both of Bob's connections once, in id order.
const phone = open();
const laptop = open();
await Promise.all([phone.opened, laptop.opened]);
const sent = await chat();
const read = await chat("chat_read_indicator");
const end = await marker();
for (const [name, socket] of [
  ["phone", phone],
  ["laptop", laptop],
]) {
  const frames = await socket.until(3);
  check(same(ids(frames), [sent, read, end]), `${name}: the chat and the read indicator once each, in id order`);
}
console.log(`     Bob's phone printed: ${JSON.stringify(phone.frames[0])}`);

// 2. Resume after a disconnect: nothing missed, nothing repeated.
laptop.ws.close(1000, "bye");
const gone = await laptop.closed;
check(gone.code === 1000, `a client's close is answered (${gone.code})`);
const missed = [await chat(), await chat()];
const back = open(`?after=${end}`);
await back.opened;
check(same(ids(await back.until(2)), missed), "a resume sends exactly the records missed");
const live = await chat();
check(same(ids(await back.until(3)), [...missed, live]), "then live ones, once");

// 3. A ticket opens one connection, once, with no header.
const { ticket } = await post("/apps/buzz/stream/tickets", BOB.token);
const browser = open(`?ticket=${ticket}`, null);
await browser.opened;
check(true, "a ticket opens the stream without an Authorization header");
const reused = open(`?ticket=${ticket}`, null);
const refused = await reused.opened.then(
  () => "opened",
  (err) => err.message,
);
check(refused === "HTTP 401", `the same ticket again is refused (${refused})`);

// 4. An 11th connection closes the oldest (Bob has phone, back and browser open: 3).
const more = [];
for (let i = 0; i < 8; i++) more.push(open());
await Promise.all(more.map((s) => s.opened));
const eleventh = open();
await eleventh.opened;
await until(() => phone.ws.readyState !== WebSocket.OPEN, 5_000);
check(phone.ws.readyState !== WebSocket.OPEN, "the 11th connection closes the oldest: its close frame arrives at once");
// Under wrangler dev the server keeps the TCP connection after the closing handshake: `ws` reports the
// close when its own 30 s closing timeout ends it (docs/realtime.md, "Closing").
const oldest = await Promise.race([phone.closed, sleep(40_000).then(() => null)]);
check(oldest?.code === 4000, `with code 4000 (${oldest?.code} "${oldest?.reason ?? ""}")`);
for (const s of [back, browser, ...more, eleventh]) s.ws.close();

// 5. Hibernation: an idle object (about 10 s under wrangler dev) wakes for a chat.
const sleeper = open();
await sleeper.opened;
console.log("     waiting 15 s for Bob's object to hibernate…");
await sleep(15_000);
sleeper.ws.send("ping");
const woke = await chat();
check(same(ids(await sleeper.until(1)), [woke]), "a hibernated object wakes for a chat and sends it");
sleeper.ws.close();

// 6. A device deleted from another device: its connection gets its close frame at once, code 4001.
const token = execFileSync("node", ["scripts/token.mjs", "mint", "--person", String(BOB.id)], {
  encoding: "utf8",
  stdio: ["ignore", "pipe", "ignore"],
}).trim();
const doomed = open("", token);
await doomed.opened;
const devices = await (await fetch(`${base}/me/devices`, { headers: { Authorization: `Bearer ${token}` } })).json();
const device = devices.find((d) => d.current);
const started = Date.now();
const deleted = await fetch(`${base}/me/devices/${device.id}`, {
  method: "DELETE",
  headers: { Authorization: `Bearer ${BOB.token}` },
});
check(deleted.status === 204, `DELETE /me/devices/${device.id} from Bob's other device: ${deleted.status}`);
await until(() => doomed.ws.readyState !== WebSocket.OPEN, 5_000);
check(
  doomed.ws.readyState !== WebSocket.OPEN,
  `the deleted device's connection got its close frame ${Date.now() - started} ms after the DELETE`,
);
const shut = await Promise.race([doomed.closed, sleep(40_000).then(() => null)]);
check(shut?.code === 4001, `with code 4001 (${shut?.code} "${shut?.reason ?? ""}")`);
process.exit(0);
