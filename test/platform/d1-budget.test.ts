import { runDurableObjectAlarm } from "cloudflare:test";
import { afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { as, call, captureTokenUses, countD1, DEMO, insertToken, personObject } from "../helpers";

/**
 * What an active app user costs the one D1, in statements (docs/capacity.md,
 * "D1 statements per active app user"): each thing the app does, counted in
 * its steady state (the token verified before, the person's object told its
 * facts), at the figure the capacity page multiplies out (the token's daily
 * bookkeeping is no statement of the request: its batch's statement, one per 100 tokens, is counted
 * in test/auth/token-bookkeeping.test.ts). A change that adds a
 * statement to one of these fails here and names the statements it ran. `countD1` spies on D1's
 * prototypes, so the statements the person's object runs through its own `env.DB` count too.
 */

afterEach(() => vi.restoreAllMocks());

const chat = () => ({
  type: "chat_message",
  sendable_type: "person",
  sendable_id: DEMO.people.bob,
  receivable_type: "person",
  receivable_id: DEMO.people.alice,
  message: "Y2lwaGVydGV4dA==",
  message_id: crypto.randomUUID(),
});
const callRecord = () => ({
  type: "outgoing_call_connected_secure",
  sendable_type: "person",
  sendable_id: DEMO.people.bob,
  receivable_type: "person",
  receivable_id: DEMO.people.alice,
  call_time: 42,
});
const tenContacts = Array.from({ length: 10 }, (_, i) => ({
  display_name: `Budget ${i}`,
  phone_numbers: [`+1415555${7000 + i}`],
  emails: [`budget${i}@example.com`],
}));

/** Runs `action` once to reach its steady state, then counts the D1 statements of a second run. */
async function statementsOf(action: () => Promise<Response>, expectedStatus: number) {
  expect((await action()).status).toBe(expectedStatus);
  await scheduler.wait(20); // the first run's work after the answer (bookkeeping, facts) lands
  const d1 = countD1();
  const response = await action();
  expect(response.status).toBe(expectedStatus);
  await response.arrayBuffer();
  vi.restoreAllMocks();
  return d1.queries.map((sql) => sql.replace(/\s+/g, " ").trim().slice(0, 120));
}

describe("D1 statements of what an app user does, in the steady state", () => {
  beforeAll(async () => {
    // A trust request for Bob to answer (asking is counted in test/contacts/trust-request-quota.test.ts).
    expect((await as("carol").send("POST", "/contacts/requests", { user_id: DEMO.people.bob })).status).toBe(201);
  });

  // A write's token is checked by its person's object, not by a D1 statement (services/device-checks.ts).
  it.each([
    {
      label: "GET /apps/buzz/heartbeat",
      action: () => as("bob").get("/apps/buzz/heartbeat"),
      status: 200,
      expected: 0,
    },
    // Answered by Bob's object from the facts D1 told it (names travel with facts; 1 statement before 2026-11-27).
    { label: "GET /me", action: () => as("bob").get("/me"), status: 200, expected: 0 },
    {
      label: "GET /apps/buzz/activity/{id} (the feed after an id)",
      action: () => as("bob").get("/apps/buzz/activity/0"),
      status: 200,
      expected: 0,
    },
    { label: "GET /apps/buzz/blocked", action: () => as("bob").get("/apps/buzz/blocked"), status: 200, expected: 0 },
    {
      // The askers' names came with their requests (1 statement before 2026-11-27).
      label: "GET /contacts/requests (the askers' names)",
      action: () => as("bob").get("/contacts/requests"),
      status: 200,
      expected: 0,
    },
    {
      label: "POST /apps/buzz/activity, a call record",
      action: () => as("bob").send("POST", "/apps/buzz/activity", callRecord()),
      status: 200,
      expected: 0,
    },
    {
      // Both parties' names travel with the chat (2 statements before 2026-11-27: the write guard and the names).
      label: "POST /apps/buzz/activity, a chat (both parties' names)",
      action: () => as("bob").send("POST", "/apps/buzz/activity", chat()),
      status: 200,
      expected: 0,
    },
    // After the chat, so the page holds a row from another person (Alice, Bob's coworker: named).
    {
      label: "GET /apps/buzz/activity/{id}, a page with another person's chat (their names)",
      action: () => as("alice").get("/apps/buzz/activity/0?limit=500"),
      status: 200,
      expected: 0,
    },
    // The contacts' links are read from the trust index (`num:`, `eml:`, `lnk:` keys), not D1 (2 statements
    // before 2026-11-27: the write's token check and the links' read).
    {
      label: "POST /contacts/sync of 10 contacts (their links, from the index)",
      action: () => as("bob").send("POST", "/contacts/sync", tenContacts),
      status: 200,
      expected: 0,
    },
    // After the sync, so the page has contacts whose links are read (1 statement before 2026-11-27).
    {
      label: "GET /contacts (the page's links, from the index)",
      action: () => as("bob").get("/contacts"),
      status: 200,
      expected: 0,
    },
    {
      label: "POST /contacts/trust/{id} (answering a request)",
      action: () => as("bob").send("POST", `/contacts/trust/${DEMO.people.carol}`, { trusted: true }),
      status: 201,
      expected: 0,
    },
    { label: "GET /me/devices", action: () => as("bob").get("/me/devices"), status: 200, expected: 0 },
    {
      label: "POST /contacts/requests (a person the index names, by id, phone or email)",
      action: () => as("bob").send("POST", "/contacts/requests", { email: "alice@acme.example" }),
      status: 201,
      expected: 0,
    },
    {
      label: "POST /apps/buzz/stream/tickets",
      action: () => as("bob").send("POST", "/apps/buzz/stream/tickets", {}),
      status: 201,
      expected: 0,
    },
    {
      label: "GET /apps/buzz/stream (a connection)",
      action: async () => {
        const res = await as("bob").get("/apps/buzz/stream", { headers: { Upgrade: "websocket" } });
        res.webSocket?.accept();
        res.webSocket?.close(1000, "counted");
        return res;
      },
      status: 101,
      expected: 0,
    },
  ])("$label: $expected statement(s)", async ({ action, status, expected }) => {
    const ran = await statementsOf(action, status);
    expect(ran, ran.join("\n")).toHaveLength(expected);
  });
});

/**
 * The app's reads of the directory D1 keeps (docs/capacity.md, "What still reads D1"): what every
 * person's object cannot answer alone, because it is other people's or the companies' (who works
 * where, a company's name and logo) or the numbers D1 keeps unique across accounts. Counted so a
 * change that adds a statement fails here; none of them is on the app's minute-by-minute path.
 */
describe("D1 statements of the app's directory reads", () => {
  it.each([
    // The numbers a person holds are the directory's (unique across accounts): one read.
    { label: "GET /me/phones", action: () => as("bob").get("/me/phones"), status: 200, expected: 1 },
    // Their companies, then those companies' employees, each in one read whatever their number.
    { label: "GET /contacts/employees", action: () => as("bob").get("/contacts/employees"), status: 200, expected: 2 },
    {
      label: "GET /contacts/employees/{id}",
      action: () => as("bob").get(`/contacts/employees/${DEMO.companies.acme}`),
      status: 200,
      expected: 2,
    },
    // The settings from the person's object; the companies' names and logos, and who is a member, from D1.
    { label: "GET /contacts/companies", action: () => as("bob").get("/contacts/companies"), status: 200, expected: 1 },
    {
      label: "PUT /contacts/companies/{id}/trust",
      action: () => as("bob").send("PUT", `/contacts/companies/${DEMO.companies.acme}/trust`, { trust: "trusted" }),
      status: 200,
      expected: 1,
    },
    // The identifiers live on the account; saving the ones it has (each start of an app) reads it and writes nothing.
    {
      label: "PUT /apps/buzz/encryption, the identifiers it has",
      action: () => as("bob").send("PUT", "/apps/buzz/encryption", { hash: "budget-hash", e2e_id: "budget-e2e" }),
      status: 200,
      expected: 1,
    },
  ])("$label: $expected statement(s)", async ({ action, status, expected }) => {
    const ran = await statementsOf(action, status);
    expect(ran, ran.join("\n")).toHaveLength(expected);
  });
});

describe("D1 statements of a token's first request of the day", () => {
  it("the heartbeat of a token verified yesterday: 0 statements; its use leaves as one message", async () => {
    const token = `pk_test_budget_day_${crypto.randomUUID().replaceAll("-", "")}`;
    await insertToken(token, { personId: DEMO.people.bob });
    expect((await call("/apps/buzz/heartbeat", { token })).status).toBe(200); // verified, recorded in KV
    await scheduler.wait(20);
    const uses = captureTokenUses();
    vi.useFakeTimers({ toFake: ["Date"], now: Date.now() + 25 * 3_600_000 });
    const d1 = countD1();
    const response = await call("/apps/buzz/heartbeat", { token });
    expect(response.status).toBe(200);
    await response.arrayBuffer();
    await scheduler.wait(20);
    vi.useRealTimers();
    vi.restoreAllMocks();
    expect(d1.queries).toEqual([]);
    expect(uses.sent).toHaveLength(1);
  });
});

describe("D1 statements of an open stream", () => {
  it("an idle socket: no periodic token check; the object's alarm (if any) makes no D1 statement", async () => {
    const res = await as("carol").get("/apps/buzz/stream", { headers: { Upgrade: "websocket" } });
    expect(res.status).toBe(101);
    const ws = res.webSocket!;
    ws.accept();
    const stub = personObject(DEMO.people.carol);
    // Before 2026-11-27 an open stream re-checked its token in D1 every minute (1 statement an alarm,
    // 1,440 a day for a person connected all day); a revocation now reaches the object at once instead.
    const d1 = countD1();
    await runDurableObjectAlarm(stub); // the retention alarm a written object keeps, or none at all
    vi.restoreAllMocks();
    expect(d1.queries).toEqual([]);
    expect(ws.readyState).toBe(WebSocket.OPEN);
    ws.close(1000, "done");
  });
});
