import { Validator, type Schema } from "@cfworker/json-schema";
import { describe, expect, it } from "vitest";
import { as, call, expectError, fresh, insertToken } from "./helpers";
import { loadDocument, resolve, type JsonSchema } from "./support/openapi";

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
