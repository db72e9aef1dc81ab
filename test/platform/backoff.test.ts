import { env } from "cloudflare:workers";
import { sql } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { createDb } from "../../src/db/client";
import { backoffSql } from "../../src/db/sql";
import { backoff } from "../../src/lib/backoff";

const attempts = Array.from({ length: 40 }, (_, i) => i);

describe("backoff (lib/backoff.ts): the one backoff gives the delays each retry had before it", () => {
  it("queue retries and the inline index work", () => {
    for (const n of attempts) {
      expect(backoff(n, { base: 1, cap: 60 })).toBe(Math.min(60, 2 ** n));
      expect(backoff(n, { base: 1, cap: 300 })).toBe(Math.min(300, 2 ** n));
      expect(backoff(n, { base: 30, cap: 3600 })).toBe(Math.min(3600, 30 * 2 ** Math.min(n, 7)));
      expect(backoff(n, { base: 1_000, cap: 60_000 })).toBe(Math.min(60_000, 1_000 * 2 ** Math.min(n, 6)));
    }
    expect([1, 2, 3, 4].map((round) => backoff(round, { base: 20, cap: 320 }))).toEqual([40, 80, 160, 320]);
  });

  it("in SQL, as the sweeps' rows are due again", async () => {
    const db = createDb(env.DB);
    const [fast, slow] = [
      { base: 1_000, cap: 60_000, old: (n: number) => Math.min(60_000, 1_000 * 2 ** Math.min(n, 6)) },
      {
        base: 5 * 60_000,
        cap: 6 * 3600_000,
        old: (n: number) => Math.min(6 * 3600_000, 5 * 60_000 * 2 ** Math.min(n, 10)),
      },
    ];
    for (const policy of [fast!, slow!]) {
      const rows = await db.all<{ n: number; wait: number }>(
        sql`select value as n, ${backoffSql(sql`value`, policy)} as wait from json_each(${JSON.stringify(attempts)})`,
      );
      expect(rows.map((row) => row.wait)).toEqual(attempts.map(policy.old));
      expect(rows.map((row) => row.wait)).toEqual(attempts.map((n) => backoff(n, policy)));
    }
  });
});
