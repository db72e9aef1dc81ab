import { Validator, type Schema } from "@cfworker/json-schema";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { sha256Hex } from "../../src/lib/crypto";
import { as, call, expectError, fresh, insertToken } from "../helpers";
import { loadDocument, resolve, type JsonSchema } from "../support/openapi";

/**
 * The document states the rules the server enforces (docs/decisions.md, "The
 * document states the rules"): for each body below, the document's request
 * schema accepts it exactly when the server does not answer 400.
 */
const doc = await loadDocument();

function accepts(path: string, method: string, body: unknown): boolean {
  const schema = doc.paths[path]![method]!.requestBody!.content["application/json"]!.schema;
  return new Validator(resolve(doc, schema) as Schema, "2020-12", false).validate(body).valid;
}

const OPERATOR = "sk_test_rules_operator";
await insertToken(OPERATOR, { serviceName: "operator", scopes: ["platform:admin"] });

type Case = { name: string; path: string; method: string; send: string; token: string; body: unknown };
const alice = "pk_demo_alice";
const cases: Case[] = [
  ...[
    { user_id: 2 },
    { phone: "+14155550199" },
    { email: "someone@example.com" },
    { user_id: 2, email: "someone@example.com" },
    {},
  ].map((body) => ({
    name: `trust request ${JSON.stringify(body)}`,
    path: "/contacts/requests",
    method: "post",
    send: "/contacts/requests",
    token: "pk_demo_carol",
    body,
  })),
  ...[
    { type: "chat_message", message: "hi", message_id: crypto.randomUUID() },
    { type: "chat_message", message: "hi" },
    { type: "chat_read_indicator", message_id: crypto.randomUUID() },
    { type: "incoming_call_missed" },
  ].map((extra) => ({
    name: `activity ${extra.type} ${Object.keys(extra).join(",")}`,
    path: "/apps/buzz/activity",
    method: "post",
    send: "/apps/buzz/activity",
    token: alice,
    body: { sendable_type: "person", sendable_id: 1, receivable_type: "person", receivable_id: 2, ...extra },
  })),
  ...[
    { email: [{ email: "x1@acme.example" }], emails: [{ email: "x1@acme.example" }] },
    { middle_name: "Q" },
    {},
    { nickname: "Q" },
  ].map((body) => ({
    name: `employee PUT ${JSON.stringify(Object.keys(body))}`,
    path: "/companies/{company_id}/employees/{id}",
    method: "put",
    send: "/companies/1/employees/2",
    token: alice,
    body,
  })),
  ...[
    { label: "desk" },
    { country_code: "1" },
    { phone_full: `+1415555${String(Math.floor(Math.random() * 9000) + 1000)}` },
  ].map((body) => ({
    name: `company phone ${Object.keys(body).join(",")}`,
    path: "/companies/{company_id}/phones",
    method: "post",
    send: "/companies/1/phones",
    token: alice,
    body,
  })),
  ...["relative/path", "https://hooks.example.com/ok"].map((endpoint) => ({
    name: `webhook endpoint ${endpoint}`,
    path: "/companies/{company_id}/webhooks",
    method: "post",
    send: "/companies/1/webhooks",
    token: alice,
    body: { endpoint, event: "scan:found" },
  })),
  ...[
    { kind: "employer", domain: "news.example" },
    { kind: "vendor", profile_url: "https://vendor.example/trust" },
    { kind: "site", profile_url: "https://vendor.example/trust" },
    { kind: "publisher", domain: "news.example" },
  ].map((extra) => {
    const slug = fresh("rules").replaceAll(".", "-").toLowerCase().slice(0, 60);
    return {
      name: `platform company ${JSON.stringify(extra)}`,
      path: "/internal/companies",
      method: "post",
      send: "/internal/companies",
      token: OPERATOR,
      body: { name: "Rules Co", slug, ...extra },
    };
  }),
  ...[{}, { bogus: true }, { status: "enabled" }].map((body) => ({
    name: `platform company PATCH ${JSON.stringify(body)}`,
    path: "/internal/companies/{id}",
    method: "patch",
    send: "/internal/companies/1",
    token: OPERATOR,
    body,
  })),
  ...[
    "dana@example.com",
    "dana@[192.0.2.1]",
    '"quoted"@example.com',
    "dana@acme-.example",
    "dana@mail.acme-.example",
    "dana@-acme.example",
    "dana@ac-me.example",
  ].map((email) => ({
    name: `email ${email}`,
    path: "/contacts/requests",
    method: "post",
    send: "/contacts/requests",
    token: "pk_demo_carol",
    body: { email },
  })),
];

// Phones, dates of birth and countries, as PUT employees takes them (each accepted body replaces employee 2's).
const someNumber = () => `415555${String(Math.floor(Math.random() * 9000) + 1000)}`;
const address = { line_1: "1 Main St", city: "San Francisco", region: "CA", postal_code: "94105" };
cases.push(
  ...[
    { country_code: "", phone_number: someNumber() },
    { country_code: "1", phone_number: "" },
    { country_code: "USA", phone_number: someNumber() },
    { country_code: "1", phone_number: "call me" },
    { phone_full: "+0000000000" },
    { phone_full: "" },
    { phone_full: "", country_code: "1", phone_number: someNumber() },
    { country_code: " us ", phone_number: `(415) 555-${someNumber().slice(6)}` },
    { country_code: "+1", phone_number: `415.555.${someNumber().slice(6)}` },
    { phone_full: ` +1 415 555 ${someNumber().slice(6)} ` },
  ].map((phone) => ({
    name: `employee phone ${JSON.stringify(phone)}`,
    path: "/companies/{company_id}/employees/{id}",
    method: "put",
    send: "/companies/1/employees/2",
    token: alice,
    body: { phone_numbers: [phone] },
  })),
  ...["1899-12-31", "1900-01-01", "1985-05-05", "85-05-05", "1985-02-30"].map((dob) => ({
    name: `employee dob ${dob}`,
    path: "/companies/{company_id}/employees/{id}",
    method: "put",
    send: "/companies/1/employees/2",
    token: alice,
    body: { dob },
  })),
  ...["US", " us ", "", "USA", "U1", "840"].map((country) => ({
    name: `bulk employee country ${JSON.stringify(country)}`,
    path: "/companies/{company_id}/employees/bulk",
    method: "post",
    send: "/companies/1/employees/bulk",
    token: alice,
    body: [
      {
        first_name: "Rule",
        last_name: "Country",
        emails: [{ email: `${fresh("country")}@rules.example` }],
        dob: "1985-05-05",
        addresses: [{ ...address, country }],
        license: null,
      },
    ],
  })),
  ...[
    { country_code: "", number: "4155550199" },
    { country_code: "1", number: "" },
    { phone: "+0000000000" },
    { phone: "" },
  ].map((body) => ({
    name: `my new phone ${JSON.stringify(body)}`,
    path: "/me/phones",
    method: "post",
    send: "/me/phones",
    token: "pk_demo_carol",
    body,
  })),
);

// A Telnyx public key: 32 bytes of base64, as the server's telnyxKey decodes it.
const telnyxToken = `sk_rules_telnyx_${crypto.randomUUID().replaceAll("-", "")}`;
await insertToken(telnyxToken, { serviceName: "rules-telnyx", scopes: ["calls:lookup"] });
const telnyxId = (await env.DB.prepare("SELECT id FROM access_tokens WHERE token_hash = ?")
  .bind(await sha256Hex(telnyxToken))
  .first<{ id: number }>())!.id;
const pair = (await crypto.subtle.generateKey({ name: "Ed25519" }, true, ["sign", "verify"])) as CryptoKeyPair;
const rawKey = new Uint8Array((await crypto.subtle.exportKey("raw", pair.publicKey)) as ArrayBuffer);
const key = btoa(String.fromCharCode(...rawKey));
cases.push(
  ...[
    key,
    key.replace(/=$/, ""),
    key.replaceAll("+", "-").replaceAll("/", "_"),
    ` ${key} `,
    "x".repeat(44),
    "x".repeat(42),
    `${key.replace(/=$/, "")}==`,
    `${key.slice(0, 40)}!!!=`,
  ].map((public_key) => ({
    name: `telnyx public_key ${JSON.stringify(public_key)}`,
    path: "/internal/providers/{token_id}/signing",
    method: "put",
    send: `/internal/providers/${telnyxId}/signing`,
    token: OPERATOR,
    body: { kind: "telnyx", public_key },
  })),
);

describe("request bodies: the document accepts what the server accepts", () => {
  it.each(cases)("$name", async ({ path, method, send, token, body }) => {
    const documented = accepts(path, method, body);
    const response = await call(send, { method: method.toUpperCase(), token, body });
    expect({ documented, served: response.status !== 400 }).toEqual({ documented, served: documented });
  });
});

describe("query rules in the document", () => {
  const param = (path: string, name: string) =>
    resolve(doc, doc.paths[path]!.get!.parameters!.find((p) => p.name === name)!.schema) as JsonSchema;

  it.each([
    ["/contacts", "include", "emails,phone_numbers", 200],
    ["/contacts", "include", " emails , addresses", 200],
    ["/contacts", "include", "emails,bogus", 400],
    ["/companies/{company_id}/employees/exposures", "employees", "12,15", 200],
    ["/companies/{company_id}/employees/exposures", "employees", "12,x", 400],
  ] as const)("%s?%s=%s", async (path, name, value, status) => {
    const matches = new RegExp(param(path, name).pattern as string).test(value);
    expect(matches).toBe(status === 200);
    const who = path === "/contacts" ? "carol" : "alice";
    const response = await as(who).get(`${path.replace("{company_id}", "1")}?${name}=${encodeURIComponent(value)}`);
    expect(response.status).toBe(status);
  });

  it("says end_date must follow start_date, and the server holds to it", async () => {
    expect(param("/companies/{company_id}/webhooks/history", "end_date").description).toMatch(
      /later than `start_date`/,
    );
    const response = await as("alice").get("/companies/1/webhooks/history?start_date=2026-02-02&end_date=2026-02-01");
    await expectError(response, 400, "Bad Request");
  });

  it("gives /contacts/deleted an example `since` inside its 90 days", async () => {
    const example = param("/contacts/deleted", "since").example as string;
    expect(Date.now() - Date.parse(example)).toBeLessThan(30 * 24 * 3600 * 1000);
    expect((await as("carol").get(`/contacts/deleted?since=${example}`)).status).toBe(200);
  });

  it("bounds `page` at 2^53 − 1, and the server holds to it", async () => {
    expect(param("/contacts", "page").maximum).toBe(Number.MAX_SAFE_INTEGER);
    expect((await as("carol").get(`/contacts?page=${Number.MAX_SAFE_INTEGER}`)).status).toBe(200);
    await expectError(await as("carol").get("/contacts?page=9007199254740992"), 400, "Bad Request");
  });

  it("gives email addresses a pattern whose host labels neither start nor end with `-`, as the server's", async () => {
    const email = resolve(doc, doc.components.schemas.TrustRequestCreate).properties as Record<string, JsonSchema>;
    const pattern = new RegExp(email.email!.pattern as string);
    for (const refused of ["dana@acme-.example", "dana@mail.acme-.example", "dana@-acme.example"]) {
      expect(pattern.test(refused)).toBe(false);
      const response = await call("/contacts/requests", {
        method: "POST",
        token: "pk_demo_carol",
        body: { email: refused },
      });
      await expectError(response, 400, "Bad Request");
    }
    expect(pattern.test("dana@ac-me.example")).toBe(true);
  });

  it("gives webhook history an example pair whose end_date follows its start_date, which the server takes", async () => {
    const start = param("/companies/{company_id}/webhooks/history", "start_date");
    const end = param("/companies/{company_id}/webhooks/history", "end_date");
    expect(start.description).toMatch(/earlier than `end_date`/);
    expect(Date.parse(end.example as string)).toBeGreaterThan(Date.parse(start.example as string));
    const query = `start_date=${start.example as string}&end_date=${end.example as string}`;
    expect((await as("alice").get(`/companies/1/webhooks/history?${query}`)).status).toBe(200);
  });

  it("says `after` goes only with `page` 1, on both parameters, and the server holds to it", async () => {
    const path = "/companies/{company_id}/employees";
    expect(param(path, "after").description).toMatch(/Only with `page` 1.*another page is 400/);
    expect(param(path, "page").description).toMatch(/with `after`, only 1/);
    expect((await as("alice").get("/companies/1/employees?after=1&page=1")).status).toBe(200);
    expect((await as("alice").get("/companies/1/employees?after=1")).status).toBe(200);
    await expectError(await as("alice").get("/companies/1/employees?after=1&page=2"), 400, "Bad Request");
  });

  it("declares each phone input's pattern, and says in words what a pattern cannot", () => {
    const schemas = doc.components.schemas;
    const phone = (schemas.PhoneInput!.properties ?? {}) as Record<string, JsonSchema>;
    expect(phone.country_code).toMatchObject({ minLength: 1, pattern: expect.any(String) });
    expect(phone.phone_number).toMatchObject({ minLength: 1, pattern: expect.any(String) });
    expect(phone.phone_number!.description).toMatch(/all zeros/);
    expect(phone.phone_full!.pattern).toEqual(expect.any(String));
    const number = new RegExp(phone.phone_number!.pattern as string);
    for (const refused of ["", " ", "call me", "+-()"]) expect(number.test(refused)).toBe(false);
    for (const taken of ["4155550123", "(415) 555-0123", "415.555.0123", "+1 415 555 0123"])
      expect(number.test(taken)).toBe(true);
    const code = new RegExp(phone.country_code!.pattern as string);
    for (const refused of ["", "USA", "1234", "+", "U1"]) expect(code.test(refused)).toBe(false);
    for (const taken of ["1", "+1", " 44 ", "US", "us"]) expect(code.test(taken)).toBe(true);
    const full = new RegExp(phone.phone_full!.pattern as string);
    for (const refused of ["+0000000000", "14155550123", "+"]) expect(full.test(refused)).toBe(false);
    for (const taken of ["", "+14155550123", " +1 (415) 555-0123 "]) expect(full.test(taken)).toBe(true);
  });

  it("declares a past `dob` as `format: date`, with the rule in words, and the server refuses today", async () => {
    const dob = (resolve(doc, doc.components.schemas.CreateEmployee).properties as Record<string, JsonSchema>).dob!;
    expect(dob).toMatchObject({ format: "date", pattern: expect.any(String) });
    expect(dob.description).toMatch(/1900-01-01 to yesterday/);
    const today = new Date().toISOString().slice(0, 10);
    const response = await as("alice").send("PUT", "/companies/1/employees/2", { dob: today });
    await expectError(response, 400, "Bad Request");
  });

  it("declares an address's country as two letters, the list in words", () => {
    const country = (doc.components.schemas.AddressInput!.properties as Record<string, JsonSchema>).country!;
    expect(country.pattern).toBe(String.raw`^\s*[A-Za-z]{2}\s*$`);
    expect(country.description).toMatch(/ISO 3166-1 alpha-2/);
  });

  it("declares a Telnyx public_key as 43 base64 digits and an optional `=`", () => {
    const signing = resolve(doc, doc.components.schemas.ProviderSigningInput) as { oneOf: JsonSchema[] };
    const telnyx = signing.oneOf.map((s) => s.properties as Record<string, JsonSchema>).find((p) => p.public_key)!;
    expect(telnyx.public_key).toMatchObject({ minLength: 43, pattern: String.raw`^\s*[A-Za-z0-9+/_-]{43}=?\s*$` });
    expect(telnyx.public_key!.description).toMatch(/32-byte.*44\s+characters/);
  });

  it("declares a webhook's endpoint as a URI", () => {
    const create = resolve(doc, doc.components.schemas.CreateWebhook) as { properties: Record<string, JsonSchema> };
    expect(create.properties.endpoint!.format).toBe("uri");
  });
});

describe("a path id that is not an id is 404 before the permission check", () => {
  it("PUT /companies/1/employees/bulk: 404 for a Viewer as for an Admin", async () => {
    for (const who of ["bob", "alice"] as const) {
      const response = await as(who).send("PUT", "/companies/1/employees/bulk", { middle_name: "Q" });
      await expectError(response, 404, "Not Found");
    }
  });

  it("GET /companies/1/webhooks/abc: 404 for a Viewer; a real id is still 403", async () => {
    await expectError(await as("bob").get("/companies/1/webhooks/abc"), 404, "Not Found");
    await expectError(await as("bob").get("/companies/1/webhooks/1"), 403, "Forbidden");
  });

  it("another company's id keeps its own 404 message", async () => {
    const message = await expectError(await as("carol").get("/companies/1/webhooks/1"), 404, "Not Found");
    expect(message).toBe("Not Found: company 1 does not exist");
  });
});

describe("the document's examples", () => {
  it("each example satisfies the schema that declares it", () => {
    const failures: string[] = [];
    let checked = 0;
    const walk = (node: unknown, where: string) => {
      if (Array.isArray(node)) return node.forEach((item, i) => walk(item, `${where}[${i}]`));
      if (!node || typeof node !== "object") return;
      const schema = node as JsonSchema;
      if ("example" in schema && ("type" in schema || "$ref" in schema || "pattern" in schema)) {
        const { example, examples: _examples, ...rest } = schema;
        checked++;
        const result = new Validator(resolve(doc, rest) as Schema, "2020-12", false).validate(example);
        if (!result.valid) failures.push(`${where}: ${JSON.stringify(example)}`);
      }
      for (const [key, value] of Object.entries(schema)) if (key !== "example") walk(value, `${where}.${key}`);
    };
    walk(doc.paths, "paths");
    walk(doc.components.schemas, "components.schemas");
    expect(failures).toEqual([]);
    expect(checked).toBeGreaterThan(300);
  });
});
