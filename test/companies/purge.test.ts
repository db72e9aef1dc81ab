import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it, vi } from "vitest";
import { purgeExpiredEphemeral } from "../../src/services/memberships";
import { createDeps } from "../../src/services/create-deps";
import { countRows, DEMO } from "../helpers";

/**
 * The ephemeral purge (docs/architecture.md, "Background work"): chunked,
 * resumable and fair across companies. Its own file: it loads 3,000 people.
 */

afterEach(() => {
  vi.restoreAllMocks();
});

describe("the ephemeral purge is chunked, resumable and fair", () => {
  it("3,000 due employees of 3 companies, chunks of 100: all gone, every invocation within limits, tenants interleaved", async () => {
    const companies = [DEMO.companies.acme, DEMO.companies.globex, DEMO.companies.dailyNews];
    const past = Date.now() - 3600_000;
    const people = JSON.stringify(Array.from({ length: 3000 }, (_, i) => ({ i, c: companies[i % 3] })));
    await env.DB.prepare(
      `INSERT INTO people (first_name, last_name, created_at, updated_at)
       SELECT 'Temp', 'Worker' || json_extract(value, '$.i'), ?1, ?1 FROM json_each(?2) ORDER BY key`,
    )
      .bind(past, people)
      .run();
    await env.DB.prepare(
      `INSERT INTO memberships (company_id, person_id, ephemeral_until, created_at, updated_at)
       SELECT json_extract(j.value, '$.c'), p.id, ?1, ?1, ?1
       FROM json_each(?2) j JOIN people p ON p.last_name = 'Worker' || json_extract(j.value, '$.i')`,
    )
      .bind(past, people)
      .run();

    const deps = createDeps(env);
    const prepare = vi.spyOn(env.DB, "prepare");
    const kvPuts = vi.spyOn(env.TRUST_INDEX, "put");
    const perInvocation: { statements: number; kv: number }[] = [];
    let firstChunk: { companyId: number }[] = [];
    for (let invocation = 0; invocation < 40; invocation++) {
      prepare.mockClear();
      kvPuts.mockClear();
      const { removed, more } = await purgeExpiredEphemeral(deps, new Date(), 100);
      if (invocation === 0) firstChunk = removed;
      perInvocation.push({ statements: prepare.mock.calls.length, kv: kvPuts.mock.calls.length });
      if (!more) break;
    }
    expect(await countRows("SELECT count(*) AS n FROM memberships WHERE ephemeral_until <= ?", Date.now())).toBe(0);
    expect(await countRows("SELECT count(*) AS n FROM people WHERE last_name LIKE 'Worker%'")).toBe(0);
    expect(perInvocation.length).toBeGreaterThanOrEqual(30);
    for (const { statements, kv } of perInvocation) {
      expect(statements).toBeLessThan(1000);
      expect(kv).toBeLessThan(1000);
    }
    // Round-robin: the first chunk takes from every company in turn.
    expect(firstChunk.slice(0, 6).map((row) => row.companyId)).toEqual([...companies, ...companies]);
  }, 300_000); // about 40 s on a quiet machine; 105 s seen with other work on the two cores
});
