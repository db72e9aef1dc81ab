import { env } from "cloudflare:workers";
import { afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { COMPANIES_COMPLETE_KEY, companyKey } from "../../src/domain/company-records";
import { createDeps } from "../../src/services/create-deps";
import { makeCurrent } from "../../src/services/trust-index/current";
import { heartbeat as getHeartbeat } from "../../src/routes/buzz/buzz.routes";
import { answer, as, call, countD1, DEMO, indexWorkApplied, insertToken } from "../helpers";

/*
 * The heartbeat reads no D1 once the person holds a secure number and the
 * company records are written (docs/decisions.md, "The heartbeat reads no
 * D1"), and each of its fields still follows its source within the staleness
 * bound (60 s): the commands apply their work right after their commit (a
 * `co:` key written less than a second before waits out that second: no KV
 * key is written more than once a second, db/kv-writes.ts), and a change
 * made without them is queued by D1's triggers for the minute sweep.
 */

const ADMIN = `sk_test_platform_admin_${crypto.randomUUID().replaceAll("-", "")}`;
const admin = (method: string, path: string, body?: unknown) => call(path, { method, body, token: ADMIN });
const BOUND_MS = 60_000;

/** The person's heartbeat and the D1 statements it made. */
async function heartbeat(who: "alice" | "bob" | "carol") {
  const d1 = countD1();
  const response = await as(who).get("/apps/buzz/heartbeat");
  const statements = d1.statements;
  vi.restoreAllMocks();
  return { beat: await answer(response, 200, getHeartbeat), statements };
}

/** The minute sweep of the index work (what the cron runs), for changes no command recorded. */
const sweep = () => makeCurrent(createDeps(env), {});

const ms = (iso: string | null) => (iso === null ? null : Date.parse(iso));

beforeAll(async () => {
  await insertToken(ADMIN, { serviceName: "operator", scopes: ["platform:admin"] });
  // First heartbeats: each person is assigned a secure number (a write), and the token is verified once.
  for (const who of ["alice", "bob", "carol"] as const) await as(who).get("/apps/buzz/heartbeat");
});

afterEach(() => {
  vi.restoreAllMocks();
});

describe("the heartbeat, once the person holds a secure number", () => {
  it("makes no D1 statement, and answers what D1 answers", async () => {
    const fast = await heartbeat("alice");
    expect(fast.statements).toBe(0);
    expect(fast.beat.secure_number).toMatchObject({ country_code: "1" });
    expect(fast.beat.last_company_update).toBe("2026-01-05T09:00:00.000Z");

    // Without the company records (before the rebuild marked them written): read from D1, same answer.
    const saved = await env.TRUST_INDEX.get(companyKey(DEMO.companies.acme));
    const mark = await env.TRUST_INDEX.get(COMPANIES_COMPLETE_KEY);
    expect(saved).not.toBeNull();
    expect(mark).not.toBeNull();
    await env.TRUST_INDEX.delete(companyKey(DEMO.companies.acme));
    await env.TRUST_INDEX.delete(COMPANIES_COMPLETE_KEY);
    try {
      const fallback = await heartbeat("alice");
      expect(fallback.statements).toBeGreaterThan(0);
      expect(fallback.beat).toEqual(fast.beat);
      // Carol's records (Globex's) are all there: still no D1 statement.
      expect((await heartbeat("carol")).statements).toBe(0);
    } finally {
      await env.TRUST_INDEX.put(companyKey(DEMO.companies.acme), saved!);
      await env.TRUST_INDEX.put(COMPANIES_COMPLETE_KEY, mark!);
    }
    expect((await heartbeat("alice")).statements).toBe(0);
  });

  it("a company's change reaches last_company_update within the second of its key, with no D1 statement", async () => {
    const before = Date.now();
    const renamed = await admin("PATCH", `/internal/companies/${DEMO.companies.acme}`, { name: "Acme Heartbeat" });
    expect(renamed.status).toBe(200);
    await indexWorkApplied();
    const { beat, statements } = await heartbeat("alice");
    expect(statements).toBe(0);
    expect(ms(beat.last_company_update)).toBeGreaterThanOrEqual(before);
    expect(ms(beat.last_company_update)).toBeLessThanOrEqual(Date.now());
  });

  it("a coworker's profile edit reaches last_coworker_update; one's own, last_user_update", async () => {
    const before = Date.now();
    const edited = await as("alice").send("PUT", `/companies/${DEMO.companies.acme}/employees/${DEMO.people.bob}`, {
      middle_name: "Beat",
    });
    expect(edited.status).toBe(200);
    await indexWorkApplied();
    const alice = await heartbeat("alice");
    expect(alice.statements).toBe(0);
    expect(ms(alice.beat.last_coworker_update)).toBeGreaterThanOrEqual(before);
    const bob = await heartbeat("bob");
    expect(bob.statements).toBe(0);
    expect(ms(bob.beat.last_user_update)).toBeGreaterThanOrEqual(before);
    // Bob's own change is not his coworkers' change.
    expect(ms(bob.beat.last_coworker_update) ?? 0).toBeLessThan(before);
  });

  it("saving one's encryption identifiers (which moves the record's time) reaches last_user_update", async () => {
    const before = Date.now();
    const saved = await as("carol").send("PUT", "/apps/buzz/encryption", { hash: "hb-hash", e2e_id: "hb-e2e" });
    expect(saved.status).toBe(200);
    await indexWorkApplied();
    const { beat, statements } = await heartbeat("carol");
    expect(statements).toBe(0);
    expect(ms(beat.last_user_update)).toBeGreaterThanOrEqual(before);
  });

  it("saving the identifiers one has already writes nothing: last_user_update stays", async () => {
    expect((await as("carol").send("PUT", "/apps/buzz/encryption", { hash: "hb-same", e2e_id: "hb-e2e" })).status).toBe(
      200,
    );
    await indexWorkApplied();
    const first = (await heartbeat("carol")).beat.last_user_update;
    await scheduler.wait(5);
    const d1 = countD1();
    const again = await as("carol").send("PUT", "/apps/buzz/encryption", { hash: "hb-same", e2e_id: "hb-e2e" });
    expect(await again.json()).toEqual({ hash: "hb-same", e2e_id: "hb-e2e" });
    expect(d1.queries.filter((query) => !/^\s*select/i.test(query))).toEqual([]);
    vi.restoreAllMocks();
    await indexWorkApplied();
    expect((await heartbeat("carol")).beat.last_user_update).toBe(first);
  });

  it("joining a company reaches last_company_update and last_coworker_update", async () => {
    const carolBefore = await heartbeat("carol");
    expect(carolBefore.beat.last_coworker_update).toBeNull();
    const before = Date.now();
    const joined = await admin("POST", `/internal/companies/${DEMO.companies.acme}/members`, {
      first_name: "Carol",
      last_name: "Globex",
      email: "carol@globex.example",
      roles: ["Admin"],
    });
    expect(joined.status, await joined.clone().text()).toBe(201);
    await indexWorkApplied();
    const { beat, statements } = await heartbeat("carol");
    expect(statements).toBe(0);
    expect(ms(beat.last_company_update)).toBeGreaterThanOrEqual(before);
    // Acme's other members changed before: Carol now sees them.
    expect(beat.last_coworker_update).not.toBeNull();
    // And Acme's members see her join.
    expect(ms((await heartbeat("alice")).beat.last_coworker_update)).toBeGreaterThanOrEqual(before);
  });

  it("a change no command recorded (D1 triggers) reaches the answer by the minute sweep", async () => {
    const at = Date.now() + 1_000;
    await env.DB.prepare("UPDATE companies SET updated_at = ? WHERE id = ?").bind(at, DEMO.companies.globex).run();
    await env.DB.prepare("UPDATE people SET updated_at = ? WHERE id = ?")
      .bind(at + 1, DEMO.people.carol)
      .run();
    // D1's triggers queued the work; the sweep applies it (a key written within the last second: once it passed).
    const { results: queued } = await env.DB.prepare("SELECT key FROM index_work").all<{ key: string }>();
    expect(queued.map((row) => row.key)).toEqual(
      expect.arrayContaining([companyKey(DEMO.companies.globex), `prs:${DEMO.people.carol}`]),
    );
    await sweep();
    await indexWorkApplied();
    const { beat, statements } = await heartbeat("carol");
    expect(statements).toBe(0);
    expect(ms(beat.last_company_update)).toBe(at);
    expect(ms(beat.last_user_update)).toBe(at + 1);
    // The sweep runs every minute: the bound holds.
    expect(Date.now() - at).toBeLessThan(BOUND_MS);
  });
});

describe("the heartbeat of a person the pool has no number for", () => {
  it("reads D1 and writes nothing, however often it comes (before: the assignment and its index work each time)", async () => {
    const freed = Date.now();
    // Every free number rests (released just now): the pool has none to give.
    const { meta } = await env.DB.prepare(
      "UPDATE secure_numbers SET released_at = ? WHERE person_id IS NULL AND released_at IS NULL",
    )
      .bind(freed)
      .run();
    try {
      const created = await admin("POST", "/internal/companies/1/members", {
        first_name: "Poolless",
        last_name: "Person",
        email: `poolless.${crypto.randomUUID()}@acme.example`,
        roles: ["Viewer"],
      });
      expect(created.status).toBe(201);
      const { person_id } = (await created.json()) as { person_id: number };
      const token = `pk_test_poolless_${crypto.randomUUID().replaceAll("-", "")}`;
      await insertToken(token, { personId: person_id });
      // The token's first use records it (its verification record): not the heartbeat's doing.
      expect((await call("/me", { token })).status).toBe(200);
      await scheduler.wait(50);
      for (let beat = 0; beat < 2; beat++) {
        const d1 = countD1();
        const response = await call("/apps/buzz/heartbeat", { token });
        const writes = d1.queries.filter((query) => /^\s*(insert|update|delete)\b/i.test(query));
        vi.restoreAllMocks();
        expect((await answer(response, 200, getHeartbeat)).secure_number).toBeNull();
        expect(writes, writes.join("\n")).toEqual([]);
      }
    } finally {
      expect(meta.changes).toBeGreaterThan(0);
      await env.DB.prepare("UPDATE secure_numbers SET released_at = NULL WHERE released_at = ?").bind(freed).run();
    }
  });
});
