import { createExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { createApp } from "../../src/app";
import { trustLookupGet } from "../../src/routes/buzz/buzz.routes";
import { answer, call, countD1, countInPersonObject, DEMO, expectError, insertToken, secureNumberOf } from "../helpers";
import { loadDocument } from "../support/openapi";
import { fileTokens } from "../principals";

/**
 * The telephony provider's side of trust-lookup (contract §11.3,
 * docs/providers.md): numbers whole in E.164, Twilio's and Telnyx's field
 * names, by every transport; the `Lookup-Problem` header; the token as the
 * HTTP Basic password.
 */

afterEach(() => {
  vi.restoreAllMocks();
});

type Fields = Record<string, string>;
type Transport = "GET" | "JSON POST" | "form POST";
const TRANSPORTS: Transport[] = ["GET", "JSON POST", "form POST"];

const basic = (token: string, user = "twilio") => `Basic ${btoa(`${user}:${token}`)}`;

/** trust-lookup as the provider, by `transport`, with a bearer token unless `authorization` is given. */
function ask(transport: Transport, fields: Fields, authorization?: string) {
  const headers: Record<string, string> = authorization ? { Authorization: authorization } : {};
  const token = authorization ? undefined : fileTokens.telephony;
  if (transport === "GET") return call(`/apps/buzz/trust-lookup?${new URLSearchParams(fields)}`, { token, headers });
  if (transport === "JSON POST")
    return call("/apps/buzz/trust-lookup", { method: "POST", token, headers, body: fields });
  return call("/apps/buzz/trust-lookup", {
    method: "POST",
    token,
    body: new URLSearchParams(fields).toString(),
    headers: { ...headers, "Content-Type": "application/x-www-form-urlencoded" },
  });
}

async function decision(response: Response) {
  return { body: await answer(response, 200, trustLookupGet), problem: response.headers.get("Lookup-Problem") };
}

const alice = DEMO.people.alice;
/** Alice's secure number (her heartbeat assigns it), E.164. */
let ALICE = "";
/** Acme's phone: Alice, an Acme member, trusts it. */
const ACME = "+14155550100";
/** Nobody's number: nobody trusts it. */
const STRANGER = "+16505550123";
/** A pool number nobody holds (this file's heartbeats take the lowest ones). */
const UNHELD = "+12025550110";

beforeAll(async () => {
  ALICE = (await secureNumberOf("alice")).e164;
});

const national = (e164: string) => ({ code: "1", number: e164.slice(2) });

/** Each form a receiver and a caller may take, for (receiver, caller). */
const FORMS: [string, (receiver: string, caller: string) => Fields][] = [
  [
    "code + number (the seed's)",
    (r, c) => ({
      number_code: national(r).code,
      number: national(r).number,
      inbound_code: national(c).code,
      inbound: national(c).number,
    }),
  ],
  ["number and inbound whole in E.164", (r, c) => ({ number: r, inbound: c })],
  ["To/From (Twilio, Telnyx)", (r, c) => ({ To: r, From: c })],
  ["Called/Caller", (r, c) => ({ Called: r, Caller: c })],
  ["a mix: number in E.164, From", (r, c) => ({ number: r, From: c })],
];

describe("every form of the numbers, by every transport", () => {
  for (const transport of TRANSPORTS) {
    it.each(FORMS)(`${transport}, %s: trusted and untrusted, no Lookup-Problem`, async (_, form) => {
      expect(await decision(await ask(transport, form(ALICE, ACME)))).toEqual({
        body: { trusted: true, user_id: alice, caller_verification: null },
        problem: null,
      });
      expect(await decision(await ask(transport, form(ALICE, STRANGER)))).toEqual({
        body: { trusted: false, user_id: alice, caller_verification: null },
        problem: null,
      });
    });
  }

  it("a Twilio-sized form (every field Twilio posts) answers like the bare one", async () => {
    const twilio = {
      AccountSid: "AC00000000000000000000000000000000",
      ApiVersion: "2010-04-01",
      CallSid: "CA00000000000000000000000000000000",
      CallStatus: "ringing",
      Called: ALICE,
      CalledCountry: "US",
      Caller: ACME,
      CallerCountry: "US",
      Direction: "inbound",
      From: ACME,
      FromCountry: "US",
      To: ALICE,
      ToCountry: "US",
    };
    expect(await decision(await ask("form POST", twilio))).toEqual({
      body: { trusted: true, user_id: alice, caller_verification: null },
      problem: null,
    });
  });

  it("a `+` sent unencoded (a space once decoded) is read as the `+` it was", async () => {
    const response = await call(`/apps/buzz/trust-lookup?number=${ALICE}&From=${ACME}`, {
      token: fileTokens.telephony,
    });
    expect(await decision(response)).toEqual({
      body: { trusted: true, user_id: alice, caller_verification: null },
      problem: null,
    });
  });
});

describe("when both forms are present, the seed's fields win", () => {
  it.each(TRANSPORTS)("%s: the receiver and the caller each from the seed's fields", async (transport) => {
    // The seed's fields name Alice and Acme; the provider's names say otherwise.
    expect(
      await decision(
        await ask(transport, {
          ...FORMS[0]![1](ALICE, ACME),
          To: UNHELD,
          From: STRANGER,
          Called: UNHELD,
          Caller: STRANGER,
        }),
      ),
    ).toEqual({ body: { trusted: true, user_id: alice, caller_verification: null }, problem: null });
    // ... and the other way round: the seed's receiver is nobody's, To is Alice's.
    expect(await decision(await ask(transport, { number: UNHELD, To: ALICE, inbound: ACME }))).toEqual({
      body: { trusted: false, user_id: 0, caller_verification: null },
      problem: null,
    });
    // The seed's caller is a stranger, From is Acme.
    expect(await decision(await ask(transport, { To: ALICE, inbound: STRANGER, From: ACME }))).toEqual({
      body: { trusted: false, user_id: alice, caller_verification: null },
      problem: null,
    });
  });

  it("To wins over Called, From over Caller", async () => {
    expect(await decision(await ask("form POST", { To: ALICE, Called: UNHELD, From: ACME, Caller: STRANGER }))).toEqual(
      {
        body: { trusted: true, user_id: alice, caller_verification: null },
        problem: null,
      },
    );
  });

  it("a seed field that is present but unreadable still wins (and is named), blank ones count as absent", async () => {
    expect(await decision(await ask("GET", { number: "not a number", To: ALICE, From: ACME }))).toEqual({
      body: { trusted: false, user_id: 0, caller_verification: null },
      problem: "receiver unreadable",
    });
    expect(
      await decision(await ask("GET", { number: " ", number_code: "", To: ALICE, inbound: "", From: ACME })),
    ).toEqual({
      body: { trusted: true, user_id: alice, caller_verification: null },
      problem: null,
    });
  });
});

describe("the Lookup-Problem header", () => {
  const cases: [
    string,
    (receiver: string) => Fields,
    { trusted: boolean; user_id: number; caller_verification: string | null },
    string | null,
  ][] = [
    [
      "nothing at all",
      () => ({}),
      { trusted: false, user_id: 0, caller_verification: null },
      "receiver missing, caller missing",
    ],
    [
      "only the caller",
      () => ({ From: ACME }),
      { trusted: false, user_id: 0, caller_verification: null },
      "receiver missing",
    ],
    [
      "only the receiver",
      (r) => ({ To: r }),
      { trusted: false, user_id: alice, caller_verification: null },
      "caller missing",
    ],
    [
      "a code without its number",
      (r) => ({ number: r, inbound_code: "1" }),
      { trusted: false, user_id: alice, caller_verification: null },
      "caller missing",
    ],
    [
      "an unreadable receiver",
      () => ({ To: "client:alice", From: ACME }),
      { trusted: false, user_id: 0, caller_verification: null },
      "receiver unreadable",
    ],
    [
      "a receiver without its code or a +",
      (r) => ({ number: r.slice(1), inbound: ACME }),
      { trusted: false, user_id: 0, caller_verification: null },
      "receiver unreadable",
    ],
    [
      "a withheld caller (Twilio's `anonymous`)",
      (r) => ({ To: r, From: "anonymous" }),
      { trusted: false, user_id: alice, caller_verification: null },
      "caller unreadable",
    ],
    [
      "a caller with a bad code",
      (r) => ({ number: r, inbound_code: "ZZ", inbound: "4155550100" }),
      { trusted: false, user_id: alice, caller_verification: null },
      "caller unreadable",
    ],
    [
      "both unreadable",
      () => ({ To: "12", From: "x" }),
      { trusted: false, user_id: 0, caller_verification: null },
      "receiver unreadable, caller unreadable",
    ],
    [
      "an unreadable receiver, no caller",
      () => ({ Called: "sip:alice@example.com" }),
      { trusted: false, user_id: 0, caller_verification: null },
      "receiver unreadable, caller missing",
    ],
    [
      "a well-formed receiver nobody holds",
      () => ({ To: UNHELD, From: ACME }),
      { trusted: false, user_id: 0, caller_verification: null },
      null,
    ],
    [
      "a well-formed stranger calling",
      (r) => ({ To: r, From: STRANGER }),
      { trusted: false, user_id: alice, caller_verification: null },
      null,
    ],
  ];

  for (const transport of TRANSPORTS) {
    it.each(cases)(`${transport}, %s`, async (_, fields, body, problem) => {
      expect(await decision(await ask(transport, fields(ALICE)))).toEqual({ body, problem });
    });
  }

  it("a body that is no object at all: both missing, still 200", async () => {
    for (const [body, type] of [
      ['{"To": ', "application/json"],
      ["[1, 2]", "application/json"],
      ["hello", "text/plain"],
    ] as const) {
      const response = await call("/apps/buzz/trust-lookup", {
        method: "POST",
        token: fileTokens.telephony,
        body,
        headers: { "Content-Type": type },
      });
      expect(await decision(response)).toEqual({
        body: { trusted: false, user_id: 0, caller_verification: null },
        problem: "receiver missing, caller missing",
      });
    }
  });

  it("the OpenAPI document declares it on both trust-lookup operations", async () => {
    const doc = await loadDocument();
    const path = doc.paths["/apps/buzz/trust-lookup"]!;
    for (const method of ["get", "post"]) {
      expect(path[method]!.responses["200"]!.headers).toHaveProperty("Lookup-Problem");
    }
    const parameters = (path.get as unknown as { parameters: { name: string; required?: boolean }[] }).parameters;
    expect(parameters.map((p) => p.name)).toEqual(expect.arrayContaining(["To", "From", "Called", "Caller"]));
  });
});

describe("a blocked call keeps the caller the provider named", () => {
  it("From in E.164 is recorded as code and number; an unreadable one as sent", async () => {
    await decision(await ask("form POST", { To: ALICE, From: "+13035550191" }));
    await decision(await ask("form POST", { To: ALICE, From: "Restricted" }));
    const recorded = async (phone: string, code: string) =>
      countInPersonObject(
        alice,
        "SELECT count(*) AS n FROM blocked_calls WHERE phone_number = ? AND country_code = ?",
        phone,
        code,
      );
    for (let i = 0; i < 80 && (await recorded("Restricted", "")) === 0; i++) await scheduler.wait(25);
    expect(await recorded("3035550191", "1")).toBe(1);
    expect(await recorded("Restricted", "")).toBe(1);
  });
});

describe("a warm lookup in the provider's forms reads no D1", () => {
  const sends: [string, () => Promise<Response>][] = [
    ["GET, E.164 numbers", () => ask("GET", { number: ALICE, inbound: ACME })],
    ["form POST, To/From, Basic auth", () => ask("form POST", { To: ALICE, From: ACME }, basic(fileTokens.telephony))],
    ["JSON POST, Called/Caller", () => ask("JSON POST", { Called: ALICE, Caller: ACME })],
    ["GET, To/From, Basic auth", () => ask("GET", { To: ALICE, From: ACME }, basic(fileTokens.telephony))],
  ];
  it.each(sends)("%s: 50 warm lookups, 0 D1 statements", async (_, send) => {
    for (let i = 0; i < 3; i++)
      expect(await (await send()).json()).toEqual({ trusted: true, user_id: alice, caller_verification: null });
    await scheduler.wait(50);
    const d1 = countD1();
    for (let i = 0; i < 50; i++) {
      const response = await send();
      expect(await response.json()).toEqual({ trusted: true, user_id: alice, caller_verification: null });
    }
    expect(d1.statements).toBe(0);
  });
});

describe("the token as the HTTP Basic password", () => {
  it.each(TRANSPORTS)("%s trust-lookup with Basic: the same answers", async (transport) => {
    const authorization = basic(fileTokens.telephony);
    expect(await decision(await ask(transport, { To: ALICE, From: ACME }, authorization))).toEqual({
      body: { trusted: true, user_id: alice, caller_verification: null },
      problem: null,
    });
    expect(await decision(await ask(transport, { To: ALICE, From: STRANGER }, authorization))).toEqual({
      body: { trusted: false, user_id: alice, caller_verification: null },
      problem: null,
    });
  });

  it("any user name, or none, is ignored", async () => {
    for (const user of ["", "AC123", "sk_demo_telephony"]) {
      const response = await ask("GET", { To: ALICE, From: ACME }, basic(fileTokens.telephony, user));
      expect(await decision(response)).toEqual({
        body: { trusted: true, user_id: alice, caller_verification: null },
        problem: null,
      });
    }
  });

  it("authenticates nothing else: a valid token as the Basic password is 401 elsewhere, with no Basic challenge", async () => {
    // A browser that saved Basic credentials sends them cross-site (docs/security.md): only the
    // telephony provider's two routes read them.
    const asPerson = { Authorization: basic(fileTokens.alice, "alice") };
    const asProvider = { Authorization: basic(fileTokens.telephony) };
    for (const [method, path, headers] of [
      ["GET", "/companies/1", asPerson],
      ["GET", "/apps/buzz/heartbeat", asPerson],
      ["POST", "/contacts/trust/3", asPerson],
      ["GET", "/internal/company-phones", asProvider],
    ] as const) {
      const response = await call(path, { method, headers: { ...headers } });
      expect(await expectError(response, 401, "Unauthorized")).toContain("trust-lookup and call-lookup");
      expect(response.headers.get("WWW-Authenticate")).toBe('Bearer realm="api"');
    }
    // The same credentials still work on the two provider routes.
    expect(await decision(await ask("GET", { To: ALICE, From: ACME }, asProvider.Authorization))).toEqual({
      body: { trusted: true, user_id: alice, caller_verification: null },
      problem: null,
    });
    const details = await call(
      `/apps/buzz/call-lookup?${new URLSearchParams({ number_code: "1", number: ALICE.slice(2), inbound_code: "1", inbound: ACME.slice(2) })}`,
      {
        headers: asProvider,
      },
    );
    expect(details.status).toBe(200);
  });

  it("a wrong password, a token of the wrong kind, or a malformed Basic header is refused", async () => {
    const lookup = "/apps/buzz/trust-lookup?To=%2B12025550101&From=%2B14155550100";
    const wrong = basic("sk_demo_telephony_not_the_token");
    await expectError(await call(lookup, { headers: { Authorization: wrong } }), 401, "Unauthorized");
    await expectError(await call("/companies/1", { headers: { Authorization: wrong } }), 401, "Unauthorized");
    await expectError(await call(lookup, { headers: { Authorization: basic(fileTokens.alice) } }), 403, "Forbidden");
    for (const header of [
      `Basic ${btoa(fileTokens.telephony)}`, // no colon: no password
      `Basic ${btoa("twilio:")}`, // an empty password
      "Basic !!!not-base64!!!",
      `Basic ${btoa(`twilio:${fileTokens.telephony}\n`)}`, // `echo` left a newline in it
      "Basic",
    ]) {
      const response = await call(lookup, { headers: { Authorization: header } });
      expect(await expectError(response, 401, "Unauthorized")).toContain("Basic");
    }
  });

  it("a 401 on trust-lookup and call-lookup challenges for Basic (Twilio sends credentials only then); elsewhere Bearer only", async () => {
    for (const path of ["/apps/buzz/trust-lookup?To=%2B12025550101", "/apps/buzz/call-lookup?To=%2B12025550101"]) {
      const lookup = await call(path);
      expect(lookup.status).toBe(401);
      expect(lookup.headers.get("WWW-Authenticate")).toMatch(/^Basic realm="api"/);
      expect(lookup.headers.get("WWW-Authenticate")).toContain("Bearer");
    }
    const posted = await call("/apps/buzz/trust-lookup", {
      method: "POST",
      body: "To=%2B12025550101",
      headers: { "Content-Type": "application/x-www-form-urlencoded" },
    });
    expect(posted.status).toBe(401);
    expect(posted.headers.get("WWW-Authenticate")).toMatch(/^Basic/);
    const company = await call("/companies/1");
    expect(company.headers.get("WWW-Authenticate")).toBe('Bearer realm="api"');
  });

  it("shares the token's rate limit: past the budget, Basic gets the 429 with Retry-After too", async () => {
    // A token this isolate has not seen yet, so its first request asks the (spent) limiter.
    const token = `sk_basic_over_budget_${Date.now()}`;
    await insertToken(token, { serviceName: "telephony", scopes: ["calls:lookup"] });
    const spent = { ...env, SERVICE_RATE_LIMIT: { limit: async () => ({ success: false }) } };
    const response = await createApp().request(
      `/apps/buzz/trust-lookup?${new URLSearchParams({ To: ALICE, From: ACME })}`,
      { headers: { Authorization: basic(token) } },
      spent,
      createExecutionContext(),
    );
    expect(response.status).toBe(429);
    expect(response.headers.get("Retry-After")).toBe("60");
  });
});

describe("a field given twice is unreadable, by the query string and by the body alike", () => {
  const twice = (first: string, second: string) => `To=${encodeURIComponent(first)}&To=${encodeURIComponent(second)}`;
  const from = `From=${encodeURIComponent(ACME)}`;

  it("GET ?To=…&To=… reads neither value (it once read the first)", async () => {
    const response = await call(`/apps/buzz/trust-lookup?${twice(ALICE, UNHELD)}&${from}`, {
      token: fileTokens.telephony,
    });
    expect(await decision(response)).toEqual({
      body: { trusted: false, user_id: 0, caller_verification: null },
      problem: "receiver unreadable",
    });
  });

  it("a form with To twice reads neither value (it once read the last)", async () => {
    const response = await call("/apps/buzz/trust-lookup", {
      method: "POST",
      token: fileTokens.telephony,
      body: `${twice(UNHELD, ALICE)}&${from}`,
      headers: { "Content-Type": "application/x-www-form-urlencoded" },
    });
    expect(await decision(response)).toEqual({
      body: { trusted: false, user_id: 0, caller_verification: null },
      problem: "receiver unreadable",
    });
  });

  it("a JSON list for From is unreadable too", async () => {
    const response = await call("/apps/buzz/trust-lookup", {
      method: "POST",
      token: fileTokens.telephony,
      body: { To: ALICE, From: [ACME, STRANGER] },
    });
    expect(await decision(response)).toEqual({
      body: { trusted: false, user_id: alice, caller_verification: null },
      problem: "caller unreadable",
    });
  });
});
