import { beforeAll, describe, expect, it } from "vitest";
import { as, call } from "../helpers";
import { fileTokens, type Who } from "../principals";
import { conformanceProblems, loadDocument, operationsOf, type Op, type Parameter } from "../support/openapi";

/**
 * Response conformance: every GET of the document, as every demo principal
 * (and without a token), with path ids that exist and ones that do not; each
 * answer must be a documented status whose body matches its schema strictly
 * (test/support/openapi.ts). test/platform/fuzz.test.ts checks every answer it sees
 * the same way.
 */
const doc = await loadDocument();
const gets = operationsOf(doc).filter((op) => op.method === "GET");
const principals: (Who | null)[] = ["alice", "bob", "carol", "telephony", "scanner", null];

/** A value for a parameter: its example when the document has one, else something plausible. */
function valueFor(param: Parameter, variant: number): string {
  const known: Record<string, string[]> = {
    company_id: ["1", "2", "999"],
    id: ["1", "2", "3", "999"],
    container_id: ["dailynews", "oldblog", "nope"],
  };
  const choices = known[param.name];
  if (choices) return choices[variant % choices.length]!;
  const example = param.schema?.example ?? (param as { example?: unknown }).example;
  return example === undefined ? "1" : String(example);
}

function requestFor(op: Op, variant: number): string {
  const params = op.operation.parameters ?? [];
  let path = op.path;
  for (const param of params.filter((p) => p.in === "path")) {
    path = path.replace(`{${param.name}}`, encodeURIComponent(valueFor(param, variant)));
  }
  const query = params
    .filter((p) => p.in === "query" && (p.required || variant % 2 === 1))
    .map((p) => `${p.name}=${encodeURIComponent(valueFor(p, variant))}`);
  return query.length ? `${path}?${query.join("&")}` : path;
}

beforeAll(async () => {
  // Something to read: a contact, a message, a heartbeat (secure number).
  await as("alice").send("POST", "/contacts/sync", [
    { display_name: "Bob", phone_numbers: ["+14155550199"], emails: ["bob@acme.example"] },
  ]);
  await as("bob").get("/apps/buzz/heartbeat");
  await as("bob").send("POST", "/apps/buzz/activity", {
    type: "chat_message",
    sendable_type: "person",
    sendable_id: 2,
    receivable_type: "person",
    receivable_id: 1,
    message: "aGk=",
    message_id: crypto.randomUUID(),
  });
});

describe("the conformance check", () => {
  const health = gets.find((op) => op.path === "/healthz")!;
  const json = (body: unknown, status = 200, headers: Record<string, string> = { "X-Request-Id": "r1" }) =>
    new Response(JSON.stringify(body), { status, headers: { "Content-Type": "application/json", ...headers } });

  it("accepts the documented answer and refuses an undocumented field, status or error shape", async () => {
    expect(await conformanceProblems(doc, health, json({ ok: true }))).toEqual([]);
    expect(await conformanceProblems(doc, health, json({ ok: true, extra: 1 }))).toHaveLength(1);
    expect(await conformanceProblems(doc, health, json({ ok: "yes" }))).toHaveLength(1);
    expect((await conformanceProblems(doc, health, json({ ok: true }, 201)))[0]).toContain("not documented");
    const company = gets.find((op) => op.path === "/companies/{company_id}")!;
    expect(
      await conformanceProblems(doc, company, json({ error: { code: "404", message: "Not Found: x" } }, 404)),
    ).toEqual([]);
    expect(await conformanceProblems(doc, company, json({ error: { code: "400", message: "x" } }, 404))).toHaveLength(
      1,
    );
  });

  it("refuses an answer without a header its status declares required, or with a common one it does not declare", async () => {
    expect(await conformanceProblems(doc, health, json({ ok: true }, 200, {}))).toEqual([
      "GET /healthz → 200: required header X-Request-Id not sent",
    ]);
    const company = gets.find((op) => op.path === "/companies/{company_id}")!;
    expect(await conformanceProblems(doc, company, json({ id: 1 }, 200))).toContain(
      "GET /companies/{company_id} → 200: required header RateLimit not sent",
    );
    const post = operationsOf(doc).find((op) => op.method === "POST" && op.path === "/apps/buzz/activity")!;
    const refused = json({ error: { code: "403", message: "Forbidden: x" } }, 403, {
      "X-Request-Id": "r1",
      "x-d1-bookmark": "b",
    });
    expect(await conformanceProblems(doc, post, refused)).toEqual([
      "POST /apps/buzz/activity → 403: header x-d1-bookmark sent, not declared",
    ]);
  });
});

describe("every GET answer conforms to the document", () => {
  it("has GET operations to walk", () => expect(gets.length).toBeGreaterThan(15));

  it.each(principals.map((who) => ({ who: who ?? "anonymous", token: who ? fileTokens[who] : undefined })))(
    "as $who",
    async ({ token }) => {
      const problems: string[] = [];
      for (const op of gets) {
        for (const variant of [0, 1, 2, 3]) {
          const response = await call(requestFor(op, variant), { token });
          problems.push(...(await conformanceProblems(doc, op, response)));
        }
      }
      expect(problems).toEqual([]);
    },
  );
});
