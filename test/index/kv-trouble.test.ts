import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it, vi } from "vitest";
import { FallbackGate } from "../../src/lib/fallback-gate";
import { trustLookupGet } from "../../src/routes/buzz/buzz.routes";
import { answer, as, DEMO, secureNumberOf } from "../helpers";

/*
 * KV trouble is no D1 storm (docs/architecture.md, "When KV fails"): with KV's reads failing, each
 * isolate reads D1 for it at most once a second; a lookup that fallback does not serve fails closed
 * (`Lookup-Problem: index unavailable`), the heartbeat answers from the person's object.
 */

afterEach(() => vi.restoreAllMocks());

/** Every D1 statement run in this isolate, the objects' own included (the prototypes, not one instance). */
function spyD1() {
  const seen = { statements: 0 };
  const statement = Object.getPrototypeOf(env.DB.prepare("select 1")) as D1PreparedStatement;
  for (const method of ["first", "all", "run", "raw"] as const) {
    const original = statement[method] as (...args: unknown[]) => unknown;
    vi.spyOn(statement, method).mockImplementation(function (this: D1PreparedStatement, ...args: unknown[]) {
      seen.statements++;
      return original.apply(this, args);
    } as never);
  }
  const database = Object.getPrototypeOf(env.DB) as D1Database;
  const batch = database.batch;
  vi.spyOn(database, "batch").mockImplementation(function (this: D1Database, statements: D1PreparedStatement[]) {
    seen.statements += statements.length;
    return batch.call(this, statements);
  } as never);
  return seen;
}

const failKvReads = () =>
  vi.spyOn(env.TRUST_INDEX, "get").mockImplementation((() => Promise.reject(new Error("KV is down"))) as never);

describe("the fallback gate", () => {
  it("lets one fallback through per second, with up to 250 ms of jitter", () => {
    const gate = new FallbackGate(() => 0.999);
    expect(gate.pass(10_000)).toBe(true);
    expect(gate.pass(10_500)).toBe(false);
    expect(gate.pass(11_000)).toBe(false);
    expect(gate.pass(11_249)).toBe(true);
    expect(gate.pass(11_300)).toBe(false);
  });
});

describe("with KV's reads failing", () => {
  it("50 trust-lookups and 10 heartbeats: a handful of D1 statements, not hundreds; lookups fail closed", async () => {
    const receiving = (await secureNumberOf("bob")).e164;
    const warm = await as("bob").get("/apps/buzz/heartbeat");
    expect(warm.status).toBe(200);
    await new Promise((resolve) => setTimeout(resolve, 1_300)); // a fresh second for the gate
    failKvReads();
    const d1 = spyD1();
    const started = Date.now();
    const problems: (string | null)[] = [];
    for (let i = 0; i < 50; i++) {
      const query = new URLSearchParams({ number: receiving, inbound: DEMO.acmePhone });
      const response = await as("telephony").get(`/apps/buzz/trust-lookup?${query}`);
      const body = await answer(response, 200, trustLookupGet);
      problems.push(response.headers.get("Lookup-Problem"));
      if (response.headers.get("Lookup-Problem") === "index unavailable") expect(body.trusted).toBe(false);
    }
    for (let i = 0; i < 10; i++) {
      const response = await as("bob").get("/apps/buzz/heartbeat");
      expect(response.status).toBe(200);
    }
    const seconds = Math.ceil((Date.now() - started) / 1000);
    // At most one fallback a second in this isolate, each a few statements (the lookup's facts and fill).
    expect(d1.statements).toBeLessThanOrEqual(10 * (seconds + 1));
    expect(problems.filter((p) => p === "index unavailable").length).toBeGreaterThanOrEqual(45);
  });
});
