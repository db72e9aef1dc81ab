import { createExecutionContext, createMessageBatch, getQueueResult } from "cloudflare:test";
import { env, exports } from "cloudflare:workers";
import type { z } from "@hono/zod-openapi";
import { vi } from "vitest";
import { expect } from "vitest";
import { ErrorSchema } from "../src/lib/errors";
import { createActivity, heartbeat } from "../src/routes/buzz/buzz.routes";
import { createEmployee } from "../src/routes/employees/employees.routes";
import { listMyPhones } from "../src/routes/me/me.routes";
import { DEMO } from "../src/fixtures/demo-world";
import { INDEX_COMPLETE_KEY } from "../src/domain/trust-records";
import { KEY_WRITE_GAP_MS } from "../src/db/kv-writes";
import { personStub } from "../src/objects/person/stub";
import worker from "../src/index";
import type { BackgroundMessage, TokenUseMessage } from "../src/domain/queue-messages";
import { fileTokens, type Who } from "./principals";

export { DEMO };

/** The demo world's people-search sites, as the licenses API shows them. */
const demoSite = (id: number, name: string, slug: string, scanner: boolean) => ({
  id,
  name,
  status: "enabled",
  url: `https://${slug}.example`,
  logo: "",
  scanner,
});
export const DEMO_SITES = {
  peopleFinder: demoSite(3, "PeopleFinder", "peoplefinder", true),
  spyDirectory: demoSite(4, "SpyDirectory", "spydirectory", true),
  whitePages: demoSite(5, "WhitePages Archive", "whitepages-archive", false),
};

export type CallOptions = {
  method?: string;
  token?: string;
  body?: unknown;
  headers?: Record<string, string>;
};

/** Calls the Worker like a client would, through its fetch handler. */
export function call(path: string, { method = "GET", token, body, headers = {} }: CallOptions = {}) {
  const init: RequestInit = { method, headers: { ...headers } };
  const h = init.headers as Record<string, string>;
  // Real traffic always carries the client address; a fresh one per call keeps
  // unauthenticated tests from sharing one per-IP rate-limit budget.
  h["CF-Connecting-IP"] ??= `198.51.100.${Math.floor(Math.random() * 250) + 1}`;
  if (token) h.Authorization = `Bearer ${token}`;
  if (body !== undefined) {
    init.body = typeof body === "string" ? body : JSON.stringify(body);
    h["Content-Type"] ??= "application/json";
  }
  return exports.default.fetch(new Request(`http://api.test${path}`, init));
}

/** `as("alice").get("/companies/1")`: calls as one of the demo principals (with this file's token). */
export function as(who: Who) {
  const token = fileTokens[who];
  return {
    get: (path: string, options: CallOptions = {}) => call(path, { ...options, token }),
    send: (method: string, path: string, body?: unknown, options: CallOptions = {}) =>
      call(path, { ...options, method, body, token }),
  };
}

/** What a route of src/routes (`createRoute`) says it answers: per status, a JSON body's schema. */
type Route = { responses: object };
type JsonContent = { content?: { "application/json"?: { schema: z.ZodType } } };
type JsonStatus<R extends Route> = {
  [S in keyof R["responses"]]: R["responses"][S] extends { content: { "application/json": { schema: z.ZodType } } }
    ? S
    : never;
}[keyof R["responses"]];
type AnswerOf<R extends Route, S extends keyof R["responses"]> = R["responses"][S] extends {
  content: { "application/json": { schema: infer Schema extends z.ZodType } };
}
  ? z.output<Schema>
  : never;

/**
 * The body of `route`'s answer `status`, typed and checked by the route's own
 * response schema: `const me = await answer(r, 200, getMe)`. Fails unless the
 * answer has that status and its JSON body matches the schema with no field
 * the schema does not name.
 */
export async function answer<R extends Route, S extends JsonStatus<R> & number>(
  response: Response,
  status: S,
  route: R,
): Promise<AnswerOf<R, S>> {
  const text = await response.text();
  expect(response.status, text).toBe(status);
  const schema = (route.responses as Record<number, JsonContent>)[status]!.content!["application/json"]!.schema;
  const body: unknown = JSON.parse(text);
  const parsed = schema.safeParse(body);
  if (!parsed.success)
    expect.fail(`${status} body does not match the route's schema: ${parsed.error.message}\n${text}`);
  // Zod drops what its objects do not name: an answer equal to its parse names nothing undocumented.
  expect(parsed.data, "the answer carries fields its schema does not name").toStrictEqual(body);
  return parsed.data as AnswerOf<R, S>;
}

/** Asserts the contract's error body and status; returns the message. */
export async function expectError(response: Response, status: number, phrase: string): Promise<string> {
  expect(response.status).toBe(status);
  expect(response.headers.get("Content-Type")).toMatch(/^application\/json/);
  const raw: unknown = await response.json();
  expect(Object.keys(raw as object)).toEqual(["error"]);
  const body = ErrorSchema.parse(raw);
  expect(body.error.code).toBe(String(status));
  expect(body.error.message.startsWith(`${phrase}: `)).toBe(true);
  expect(body.error.message.length).toBeGreaterThan(phrase.length + 10);
  return body.error.message;
}

/** Inserts an access token directly, for token states the demo world lacks. */
export async function insertToken(
  token: string,
  fields: { personId?: number; serviceName?: string; scopes?: string[]; expiresAt?: Date; revokedAt?: Date },
) {
  const { env } = await import("cloudflare:workers");
  const { createDb } = await import("../src/db/client");
  const { accessTokens } = await import("../src/db/schema");
  const { sha256Hex } = await import("../src/lib/crypto");
  await createDb(env.DB)
    .insert(accessTokens)
    .values({ tokenHash: await sha256Hex(token), prefix: token.slice(0, 8), ...fields });
}

/**
 * The local rate limiter counts in windows aligned to the wall-clock minute
 * (as Cloudflare's does), so a burst that straddles a minute boundary would be
 * counted in two windows. Start each burst early enough in a window.
 */
export async function startOfUsableWindow(neededMs: number) {
  const left = 60_000 - (Date.now() % 60_000);
  if (left < neededMs) await new Promise((resolve) => setTimeout(resolve, left + 250));
}

/** The SQL of a prepared D1 statement (workerd keeps it as `statement`). */
const sqlOf = (statement: D1PreparedStatement) => (statement as unknown as { statement: string }).statement;

type Batch = (statements: D1PreparedStatement[]) => Promise<unknown>;

/**
 * Calls `onRound` with the SQL of every D1 round trip from now on, before it
 * runs: each statement run on its own (`first`, `all`, `run`, `raw`) and each
 * `batch`, on the binding or a session, by whoever runs it. The spies sit on
 * the prototypes, not on one binding, so they also see the statements the
 * Durable Objects run through their own `env.DB` (docs/capacity.md, "D1
 * statements per active app user"). A promise `onRound` returns is awaited
 * before the round runs. Restore with `vi.restoreAllMocks()`.
 */
export function spyOnD1(onRound: (sql: string[]) => void | Promise<void>): void {
  const around = (sql: string[], run: () => unknown) => {
    const before = onRound(sql);
    return before ? before.then(run) : run();
  };
  const statement = Object.getPrototypeOf(env.DB.prepare("select 1")) as D1PreparedStatement;
  for (const method of ["first", "all", "run", "raw"] as const) {
    const original = statement[method] as (...args: unknown[]) => unknown;
    vi.spyOn(statement, method).mockImplementation(function (this: D1PreparedStatement, ...args: unknown[]) {
      return around([sqlOf(this)], () => original.apply(this, args));
    } as never);
  }
  // The binding's `batch` hands its statements to a session's (its always-primary
  // session): a batch is counted once, where it enters.
  let entered = 0;
  const databases = new Set<{ batch: Batch }>([
    Object.getPrototypeOf(env.DB) as { batch: Batch },
    Object.getPrototypeOf(env.DB.withSession()) as { batch: Batch },
  ]);
  for (const database of databases) {
    const original = database.batch;
    vi.spyOn(database, "batch").mockImplementation(function (this: unknown, statements: D1PreparedStatement[]) {
      const run = () => {
        entered++;
        try {
          return original.call(this, statements);
        } finally {
          entered--;
        }
      };
      return (entered > 0 ? run() : around(statements.map(sqlOf), run)) as Promise<unknown>;
    });
  }
}

/**
 * Counts what D1 is asked from now on, by the Worker and by the Durable
 * Objects (`spyOnD1`): `statements` run (each statement of a batch), `rounds`,
 * the round trips (each `batch`, and each statement run on its own), the SQL
 * of each statement in `queries` (what a failing count names) and of each
 * round trip in `roundTrips`. Restore with `vi.restoreAllMocks()`.
 */
export function countD1(): {
  readonly statements: number;
  readonly rounds: number;
  readonly queries: string[];
  readonly roundTrips: string[][];
} {
  const counts = { statements: 0, rounds: 0, queries: [] as string[], roundTrips: [] as string[][] };
  spyOnD1((sql) => {
    counts.statements += sql.length;
    counts.rounds++;
    counts.queries.push(...sql);
    counts.roundTrips.push(sql);
  });
  return counts;
}

/**
 * The real D1, except that statements whose SQL matches `pattern` fail with
 * `error` when run, the way D1 fails. `overrides` replace further members
 * (a session, `batch`).
 */
export function failingD1(pattern: RegExp, error: () => Error, overrides: Record<string, unknown> = {}): D1Database {
  const proxy: D1Database = new Proxy(env.DB, {
    get(target, key) {
      if (typeof key === "string" && key in overrides) return overrides[key];
      if (key === "prepare") {
        return (query: string) => {
          const statement = target.prepare(query);
          if (!pattern.test(query)) return statement;
          const fail = () => Promise.reject(error());
          const failing: D1PreparedStatement = Object.assign(Object.create(statement), {
            bind: () => failing,
            all: fail,
            raw: fail,
            first: fail,
            run: fail,
          });
          return failing;
        };
      }
      const value = Reflect.get(target, key);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
  return proxy;
}

let freshSeq = 0;
/** A fresh email local part per call (`tag.<time>.<n>`), so tests never collide on the global email index. */
export const fresh = (tag: string) => `${tag}.${Date.now().toString(36)}.${++freshSeq}`;

/** The one address of `employeeBody`. */
export const employeeAddress = {
  line_1: "1 Main St",
  city: "San Francisco",
  region: "CA",
  postal_code: "94105",
  country: "US",
};

/** A `POST /companies/1/employees` body for `<local>@acme.example`: Dana Scully; `extra` adds or replaces fields. */
export function employeeBody(local: string, extra: Record<string, unknown> = {}) {
  return {
    first_name: "Dana",
    last_name: "Scully",
    dob: "1988-04-12",
    emails: [{ email: `${local}@acme.example` }],
    addresses: [employeeAddress],
    ...extra,
  };
}

/** The `n` of a `SELECT count(*) AS n …` on the test database. */
export const countRows = async (sql: string, ...params: unknown[]) =>
  (await env.DB.prepare(sql)
    .bind(...params)
    .first<{ n: number }>())!.n;

/** Person `personId`'s Durable Object, as the Worker reaches it (RPC stub). */
export const personObject = (personId: number) => personStub(env.PERSON, personId);

/**
 * Runs SQL inside person `personId`'s Durable Object (their feed, blocked
 * calls, budget: src/objects/person/schema.ts) and returns its rows: how a
 * test seeds or inspects what the API keeps there.
 */
export async function inPersonObject<T extends Record<string, SqlStorageValue>>(
  personId: number,
  query: string,
  ...params: SqlStorageValue[]
): Promise<T[]> {
  const { runInDurableObject } = await import("cloudflare:test");
  return runInDurableObject(personObject(personId), (_, state) =>
    state.storage.sql.exec<T>(query, ...params).toArray(),
  );
}

/** The `n` of a `SELECT count(*) AS n …` inside person `personId`'s object. */
export const countInPersonObject = async (personId: number, query: string, ...params: SqlStorageValue[]) =>
  (await inPersonObject<{ n: number }>(personId, query, ...params))[0]!.n;

/**
 * Removes the trust index's "complete" mark for the rest of the file, as before a rebuild finished:
 * a lookup whose keys are absent then falls back to D1 (docs/architecture.md, "The rebuild and its mark").
 */
export const withoutIndexMark = () => env.TRUST_INDEX.delete(INDEX_COMPLETE_KEY);

/**
 * Waits until person `personId`'s object has written every trust-index key it holds due. A key
 * written less than a second ago stays due until that second has passed (at most one KV write per
 * key per second, src/db/kv-writes.ts) and the object's alarm writes it then: this waits the
 * second out and runs the alarm, so a test sees a second change within the second arrive.
 */
export async function indexKeysWritten(personId: number, timeoutMs = 10_000): Promise<void> {
  const { runDurableObjectAlarm, runInDurableObject } = await import("cloudflare:test");
  const stub = personObject(personId);
  const until = Date.now() + timeoutMs;
  for (;;) {
    const [due] = await inPersonObject<{ n: number; last: number | null }>(
      personId,
      "select count(*) as n, max(written_at) as last from index_keys where due = 1",
    );
    if (due!.n === 0) return;
    if (Date.now() > until) throw new Error(`person ${personId}'s index keys are still due after ${timeoutMs} ms`);
    const wait = (due!.last ?? 0) + KEY_WRITE_GAP_MS - Date.now();
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait + 5));
    await runInDurableObject(stub, (_, state) => state.storage.setAlarm(Date.now()));
    await runDurableObjectAlarm(stub);
  }
}

/**
 * Applies the index work of `keys` (all that is recorded, by default) until none of their rows is
 * left. A key written less than a second ago is deferred (its row due again when that second has
 * passed), so this waits that out and applies again, as the background queue does.
 */
export async function indexWorkApplied(keys?: string[], timeoutMs = 10_000): Promise<void> {
  const { makeCurrent } = await import("../src/services/trust-index/current");
  const { createDeps } = await import("../src/services/create-deps");
  const deps = createDeps(env);
  const until = Date.now() + timeoutMs;
  for (;;) {
    const { results } = await env.DB.prepare("select key from index_work").all<{ key: string }>();
    const left = results.map((row) => row.key).filter((key) => !keys || keys.includes(key));
    if (left.length === 0) return;
    if (Date.now() > until) throw new Error(`index work of ${left.join(", ")} still due after ${timeoutMs} ms`);
    await makeCurrent(deps, { keys: left });
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/**
 * Waits until the trust index holds every change made so far: D1's index work applied
 * (`indexWorkApplied`) and these people's objects' due keys written (`indexKeysWritten`).
 */
export async function trustIndexSettled(...personIds: number[]): Promise<void> {
  await indexWorkApplied();
  for (const personId of personIds) await indexKeysWritten(personId);
}

/** `trustIndexSettled` for the holder of secure number `receiverE164` (if anyone holds it). */
export async function trustIndexSettledFor(receiverE164: string): Promise<void> {
  const row = await env.DB.prepare("select person_id as id from secure_numbers where e164 = ?")
    .bind(receiverE164)
    .first<{ id: number | null }>();
  await trustIndexSettled(...(row?.id ? [row.id] : []));
}

/**
 * A demo person's secure number (their heartbeat assigns it if they hold none): as a trust
 * lookup's receiving fields, and in E.164.
 */
export async function secureNumberOf(
  who: Who,
): Promise<{ receiving: { number_code: string; number: string }; e164: string }> {
  const { secure_number } = await answer(await as(who).get("/apps/buzz/heartbeat"), 200, heartbeat);
  if (!secure_number) throw new Error(`${who} holds no secure number (is the pool empty?)`);
  return {
    receiving: { number_code: secure_number.country_code, number: secure_number.number },
    e164: secure_number.e164,
  };
}

/** The newest code the development outbox holds for `to` (an E.164 or an email), as a person reads it. */
export async function codeSentTo(to: string): Promise<string> {
  const row = await env.DB.prepare('select body from dev_outbox where "to" = ? order by id desc limit 1')
    .bind(to)
    .first<{ body: string }>();
  const code = /^(\d{6}) is your verification code/.exec(row?.body ?? "")?.[1];
  if (!code) throw new Error(`the development outbox holds no code for ${to}`);
  return code;
}

/** Calls as a demo principal, or with any token (`{ token }`). */
export function asAny(who: Who | { token: string }) {
  if (typeof who === "string") return as(who);
  return {
    get: (path: string, options: CallOptions = {}) => call(path, { ...options, token: who.token }),
    send: (method: string, path: string, body?: unknown, options: CallOptions = {}) =>
      call(path, { ...options, method, body, token: who.token }),
  };
}

/** `who` proves phone `phoneId` as a person does: a code sent to it, then the confirm with that code. */
export async function provePhone(who: Who | { token: string }, phoneId: number): Promise<Response> {
  const api = asAny(who);
  const sent = await api.send("POST", `/me/phones/${phoneId}/verification`);
  expect(sent.status).toBe(202);
  const phones = await answer(await api.get("/me/phones"), 200, listMyPhones);
  const phone = phones.find((p) => p.id === phoneId)!;
  return api.send("POST", `/me/phones/${phoneId}/confirm`, { code: await codeSentTo(phone.phone_full) });
}

/** Acme (Alice, its Admin) enters a new employee holding `phone`: their person id. */
export async function acmeEmployeeWithPhone(tag: string, phone: string, extra: Record<string, unknown> = {}) {
  const created = await as("alice").send(
    "POST",
    "/companies/1/employees",
    employeeBody(fresh(tag), { ...extra, phone_numbers: [{ phone_full: phone, primary: true }] }),
  );
  return (await answer(created, 200, createEmployee)).id;
}

/** Acme's Admin sets the phones of its employee `personId` (the first one primary), as an employer does. */
export async function employerSetsPhones(personId: number, ...numbers: string[]) {
  const response = await as("alice").send("PUT", `/companies/1/employees/${personId}`, {
    phone_numbers: numbers.map((phone_full, i) => ({ phone_full, primary: i === 0 })),
  });
  expect(response.status).toBe(200);
}

/** `from` sends person `to` a chat (or another activity `type`) through the API: the new activity's id. */
export const sendChat = (
  from: { id: number; token: string },
  to: number,
  type = "chat_message",
  messageId: string = crypto.randomUUID(),
) =>
  call("/apps/buzz/activity", {
    method: "POST",
    token: from.token,
    body: {
      type,
      sendable_type: "person",
      sendable_id: from.id,
      receivable_type: "person",
      receivable_id: to,
      message: "aGk=",
      message_id: messageId,
    },
  }).then(async (res) => (await answer(res, 200, createActivity)).data.id);

/**
 * The day's token uses sent to `USES_QUEUE` from now on (a sink nobody consumes in tests, see
 * test/vitest.config.ts); `flush()` runs the `token-uses` consumer on them as one batch, as the
 * queue does (up to 100 a batch), and returns what it answered. Restore with `vi.restoreAllMocks()`.
 */
export function captureTokenUses() {
  const sent: TokenUseMessage[] = [];
  vi.spyOn(env.USES_QUEUE, "send").mockImplementation((async (body: TokenUseMessage) => {
    sent.push(body);
  }) as never);
  return {
    sent,
    async flush() {
      const batch = createMessageBatch(
        "token-uses",
        sent.splice(0).map((body, n) => ({ id: `use-${n}`, timestamp: new Date(), attempts: 1, body })),
      );
      const ctx = createExecutionContext();
      await worker.queue!(batch, env, ctx);
      return getQueueResult(batch, ctx);
    },
  };
}

/**
 * Runs a background message and every continuation it sends, one message per invocation through the
 * queue handler, as the `background` queue does; returns how many ran. Each must be acknowledged.
 * The queue's `send`/`sendBatch` are spied on until `vi.restoreAllMocks()`.
 */
export async function drainBackground(first: BackgroundMessage): Promise<number> {
  const sent: BackgroundMessage[] = [first];
  vi.spyOn(env.BACKGROUND_QUEUE, "send").mockImplementation((async (body: BackgroundMessage) => {
    sent.push(body);
  }) as never);
  vi.spyOn(env.BACKGROUND_QUEUE, "sendBatch").mockImplementation((async (bodies: { body: BackgroundMessage }[]) => {
    sent.push(...bodies.map((b) => b.body));
  }) as never);
  let runs = 0;
  while (sent.length > 0) {
    const body = sent.shift()!;
    const batch = createMessageBatch("background", [{ id: `m${runs}`, timestamp: new Date(), attempts: 1, body }]);
    const ctx = createExecutionContext();
    await worker.queue!(batch, env, ctx);
    expect((await getQueueResult(batch, ctx)).explicitAcks).toHaveLength(1);
    runs++;
  }
  return runs;
}
