import { env } from "cloudflare:workers";
import fc from "fast-check";
import { afterAll, describe, expect, it } from "vitest";
import { call, insertToken } from "../helpers";
import { fromSchema, nastyNumbers, nastyStrings, wrongTypes } from "../support/arbitraries";
import { conformanceProblems, loadDocument, operationsOf, resolve, type Op } from "../support/openapi";

/**
 * Property-based fuzzing of every operation of the served OpenAPI document
 * (fast-check, seeded, a fixed number of runs per operation): inputs the
 * schemas accept, and mutated ones (wrong types, missing fields, huge strings
 * and numbers, U+0000 and lone surrogates, 501-element arrays, repeated query
 * values, wrong content types, malformed JSON, path parameters that are not
 * ids), sent as the principal the operation is for. Every answer must be below
 * 500 and conform to the document (test/support/openapi.ts: documented status,
 * schema, the error body on every 4xx), and a rejected write must leave every
 * table's row count as it was.
 */
const doc = await loadDocument();
const operations = operationsOf(doc);

const VALID_RUNS = 4;
const MUTATED_RUNS = 14;

/** Operations whose schema-valid calls are not fuzzed (their mutated calls are), and why. */
const SKIP_VALID: Record<string, string> = {
  clearHistory: "development-only wipe of the caller's whole activity; it takes no input to fuzz",
  clearContacts: "development-only wipe of the caller's contacts; it takes no input to fuzz",
  clearContactsOf: "development-only wipe of the caller's contacts",
  deleteContainerSession: "revokes the token the rest of the run signs in with",
};

/**
 * Tables written after the answer, by a queue consumer or `waitUntil` (index
 * rewrites, webhook deliveries, scan results, blocked calls): an earlier
 * accepted request may still be changing them while a later one is measured.
 */
const BACKGROUND =
  /^(index_work|index_written|dead_letters|webhook_deliveries|webhook_attempts|webhook_history|outbox\w*|scans|scan_results|exposures|exposure_history|blocked_calls|access_tokens)$/;

async function rowCounts(): Promise<Record<string, number>> {
  const { results } = await env.DB.prepare(
    "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name NOT LIKE '_cf_%' AND name != 'd1_migrations'",
  ).all<{ name: string }>();
  const tables = results.map((row) => row.name).filter((name) => !BACKGROUND.test(name));
  const counts = await env.DB.batch(tables.map((name) => env.DB.prepare(`SELECT count(*) AS n FROM "${name}"`)));
  return Object.fromEntries(tables.map((name, i) => [name, (counts[i]!.results[0] as { n: number }).n]));
}

/** A fresh token per operation (each has its own rate-limit budget), for the principal the operation is for. */
async function tokenFor(op: Op): Promise<string | undefined> {
  if (op.operation.security && op.operation.security.length === 0 && !op.path.startsWith("/apps/vcc")) return undefined;
  const token = `pk_fuzz_${op.operation.operationId}_${crypto.randomUUID().replaceAll("-", "")}`.slice(0, 200);
  if (/\/apps\/buzz\/(trust|call)-lookup/.test(op.path)) {
    await insertToken(token, { serviceName: "telephony", scopes: ["calls:lookup"] });
  } else if (op.path === "/internal/scan-events") {
    await insertToken(token, { serviceName: "scanner", scopes: ["scans:write"] });
  } else if (op.path.startsWith("/internal/")) {
    await insertToken(token, { serviceName: "operator", scopes: ["platform:admin"] });
  } else {
    await insertToken(token, { personId: 1 });
  }
  return token;
}

type Input = { path: Record<string, string>; query: [string, string][]; body: unknown };
type Sent = { path: string; init: { method: string; headers: Record<string, string>; body?: string } };

const PATH_VALUES: Record<string, fc.Arbitrary<string>> = {
  company_id: fc.constantFrom("1", "1", "2"),
  container_id: fc.constantFrom("dailynews", "oldblog"),
  vendor_slug: fc.constantFrom("admetrics", "trackly", "nope"),
};

function validInput(op: Op): fc.Arbitrary<Input> {
  const params = op.operation.parameters ?? [];
  const path = fc.record(
    Object.fromEntries(
      params
        .filter((p) => p.in === "path")
        .map((p) => [
          p.name,
          PATH_VALUES[p.name] ??
            (resolve(doc, p.schema).type === "integer"
              ? fc.integer({ min: 1, max: 6 }).map(String)
              : fromSchema(resolve(doc, p.schema), p.name).map(String)),
        ]),
    ),
  ) as fc.Arbitrary<Record<string, string>>;
  const query = fc
    .tuple(
      ...params
        .filter((p) => p.in === "query")
        .map((p) =>
          fc.option(
            fromSchema(resolve(doc, p.schema), p.name).map((v): [string, string] => [p.name, String(v)]),
            { nil: undefined, freq: p.required ? 100 : 2 },
          ),
        ),
    )
    .map((pairs) => pairs.filter((pair): pair is [string, string] => pair !== undefined));
  const schema = op.operation.requestBody?.content["application/json"]?.schema;
  const body = schema ? fromSchema(resolve(doc, schema)) : fc.constant(undefined);
  return fc.record({ path, query, body });
}

const PATH_NASTY = [
  "abc",
  "-1",
  "0",
  "1.5",
  "1e3",
  "99999999999999999999",
  "%00",
  "%ED%A0%80",
  "x".repeat(3000),
  "%F0%9F%99%82",
];
const QUERY_NASTY = [
  "%00",
  "%ED%A0%80",
  "%FF",
  encodeURIComponent("🙂".repeat(20)),
  "x".repeat(20_000),
  "-1",
  "1e309",
  "true",
  "[]",
];
const MALFORMED = ['{"a":', "[1,2", "\u0000", "{'single': 1}", "nul", '{"a":1}garbage', "\uFEFF{}"];

type Mutation = (input: Input, op: Op) => Sent | null;

const pick = <T>(items: readonly T[], n: number) => items[Math.abs(n) % items.length]!;

/** Each mutation takes a valid input and breaks one thing; null when it does not apply to the operation. */
function mutations(n: number): Mutation[] {
  const field = (body: unknown) =>
    body && typeof body === "object" && !Array.isArray(body) ? pick(Object.keys(body), n) : undefined;
  const withField = (input: Input, value: unknown) => {
    const body = Array.isArray(input.body) ? input.body[0] : input.body;
    const key = field(body);
    if (key === undefined) return null;
    const changed = { ...(body as object), [key]: value };
    return Array.isArray(input.body) ? [changed, ...input.body.slice(1)] : changed;
  };
  const json = (input: Input, op: Op, body: unknown, raw?: string, type = "application/json") =>
    op.method === "GET" ? null : send(op, input, raw ?? JSON.stringify(body), type);
  return [
    (input, op) => {
      const names = Object.keys(input.path);
      if (names.length === 0) return null;
      return send(
        op,
        { ...input, path: { ...input.path, [pick(names, n)]: pick(PATH_NASTY, n) } },
        undefined,
        undefined,
        true,
      );
    },
    (input, op) => {
      const names = (op.operation.parameters ?? []).filter((p) => p.in === "query").map((p) => p.name);
      if (names.length === 0) return null;
      return send(
        op,
        { ...input, query: [...input.query, [pick(names, n), pick(QUERY_NASTY, n)]] },
        undefined,
        undefined,
        true,
      );
    },
    (input, op) => {
      const names = (op.operation.parameters ?? []).filter((p) => p.in === "query").map((p) => p.name);
      if (names.length === 0) return null;
      const name = pick(names, n);
      const times = n % 2 === 0 ? 2 : 120;
      return send(op, {
        ...input,
        query: [...input.query, ...Array.from({ length: times }, (): [string, string] => [name, "1"])],
      });
    },
    (input, op) => {
      const body = Array.isArray(input.body) ? input.body[0] : input.body;
      const key = field(body);
      if (key === undefined) return json(input, op, wrongTypes[n % wrongTypes.length]);
      const { [key]: _, ...rest } = body as Record<string, unknown>;
      return json(input, op, Array.isArray(input.body) ? [rest] : rest);
    },
    (input, op) => json(input, op, withField(input, pick(wrongTypes, n)) ?? pick(wrongTypes, n)),
    (input, op) => json(input, op, withField(input, pick(nastyStrings, n)) ?? pick(nastyStrings, n)),
    (input, op) => json(input, op, withField(input, pick(nastyNumbers, n)) ?? pick(nastyNumbers, n)),
    (input, op) => {
      const element = Array.isArray(input.body) ? (input.body[0] ?? {}) : input.body;
      if (Array.isArray(input.body))
        return json(
          input,
          op,
          Array.from({ length: 501 }, () => element),
        );
      const arrayKey =
        element && typeof element === "object"
          ? Object.keys(element).find((k) => Array.isArray((element as Record<string, unknown>)[k]))
          : undefined;
      if (arrayKey === undefined)
        return json(
          input,
          op,
          Array.from({ length: 501 }, () => element ?? 1),
        );
      const list = (element as Record<string, unknown[]>)[arrayKey]!;
      return json(input, op, { ...(element as object), [arrayKey]: Array.from({ length: 501 }, () => list[0] ?? "x") });
    },
    (input, op) =>
      json(
        input,
        op,
        input.body,
        undefined,
        pick(["text/plain", "application/x-www-form-urlencoded", "application/xml", ""], n),
      ),
    (input, op) => json(input, op, undefined, pick(MALFORMED, n)),
    (input, op) => json(input, op, undefined, JSON.stringify(pick(nastyStrings, n))),
  ];
}

function send(op: Op, input: Input, body?: string, type = "application/json", raw = false): Sent {
  let path = op.path;
  for (const [name, value] of Object.entries(input.path)) {
    path = path.replace(`{${name}}`, raw && /%|^x+$/.test(value) ? value : encodeURIComponent(value));
  }
  const encode = (value: string) => {
    if (raw && /%/.test(value)) return value;
    try {
      return encodeURIComponent(value);
    } catch {
      return "%ED%A0%80"; // a lone surrogate, as raw UTF-8 bytes
    }
  };
  const query = input.query.map(([name, value]) => `${name}=${encode(value)}`).join("&");
  const headers: Record<string, string> = {};
  let sentBody = body;
  if (sentBody === undefined && op.method !== "GET" && input.body !== undefined) sentBody = JSON.stringify(input.body);
  if (sentBody !== undefined && type) headers["Content-Type"] = type;
  return { path: query ? `${path}?${query}` : path, init: { method: op.method, headers, body: sentBody } };
}

function mutatedInput(op: Op): fc.Arbitrary<Sent> {
  return fc.tuple(validInput(op), fc.nat(1000), fc.nat()).map(([input, n, which]) => {
    const all = mutations(n);
    for (let i = 0; i < all.length; i++) {
      const sent = all[(which + i) % all.length]!(input, op);
      if (sent) return sent;
    }
    return send(op, input);
  });
}

async function check(op: Op, token: string | undefined, sent: Sent) {
  const write = sent.init.method !== "GET";
  const before = write ? await rowCounts() : null;
  const headers = { ...sent.init.headers };
  if (token && op.path.startsWith("/apps/vcc")) headers.Cookie = `session=${token}`;
  const response = await call(sent.path, {
    method: sent.init.method,
    token,
    headers,
    body: sent.init.body,
  });
  statuses.set(
    `${op.operation.operationId} ${response.status}`,
    (statuses.get(`${op.operation.operationId} ${response.status}`) ?? 0) + 1,
  );
  const label = `${sent.init.method} ${sent.path.slice(0, 200)} (${(sent.init.body ?? "").slice(0, 200)})`;
  expect(response.status, label).toBeLessThan(500);
  expect(await conformanceProblems(doc, op, response), label).toEqual([]);
  if (before && response.status >= 400 && response.status !== 429) {
    expect(await rowCounts(), `${label}: a rejected write changed a table`).toEqual(before);
  }
}

/** Answers seen, by operation and status: printed at the end, to see what the inputs reached. */
const statuses = new Map<string, number>();
afterAll(() => {
  const byOperation = new Map<string, string[]>();
  for (const [key, n] of [...statuses].sort()) {
    const [operation, status] = key.split(" ");
    byOperation.set(operation!, [...(byOperation.get(operation!) ?? []), `${status}×${n}`]);
  }
  console.log(`fuzz answers: ${[...byOperation].map(([op, list]) => `${op} ${list.join(" ")}`).join("; ")}`);
});

describe("fuzzing every operation of the document", () => {
  it("covers every operation", () => expect(operations.length).toBeGreaterThan(40));

  operations.forEach((op, index) => {
    const id = op.operation.operationId;
    it(`${op.method} ${op.path} (${id})`, { timeout: 120_000 }, async () => {
      const token = await tokenFor(op);
      if (!SKIP_VALID[id]) {
        await fc.assert(
          fc.asyncProperty(validInput(op), (input) => check(op, token, send(op, input))),
          { seed: 7001 + index, numRuns: VALID_RUNS, endOnFailure: true },
        );
      }
      await fc.assert(
        fc.asyncProperty(mutatedInput(op), (sent) => check(op, token, sent)),
        { seed: 9001 + index, numRuns: MUTATED_RUNS, endOnFailure: true },
      );
    });
  });
});
