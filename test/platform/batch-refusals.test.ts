import { env } from "cloudflare:workers";
import { sql } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { guardStatement } from "../../src/db/guard";
import { badRequest, conflict, unauthorized } from "../../src/lib/errors";
import { accepted, refusal, refused } from "../../src/lib/answer";
import { createDeps } from "../../src/services/create-deps";
import { WriteBatch } from "../../src/services/outbox";

/**
 * What a rolled-back batch answers (docs/architecture.md, "Refusals"): the
 * refusal of the first check that refuses now, never the text of D1's error.
 */
describe("a rolled-back batch is explained by its checks", () => {
  const deps = () => createDeps(env);
  const violated = sql`1`;
  const holds = async () => undefined;

  it("the guard whose check refuses answers, the others' checks in the order of GUARDS", async () => {
    const batch = new WriteBatch(deps());
    batch.add(guardStatement(batch.deps.db, "settingsWriter", violated, () => Promise.reject(conflict("last"))));
    batch.add(guardStatement(batch.deps.db, "seats", sql`0`, () => Promise.reject(badRequest("no seat"))));
    // `seats` is asked before `settingsWriter` (GUARDS), whatever the statements' order.
    await expect(batch.commit()).rejects.toMatchObject({ statusCode: 400, detail: "no seat" });
  });

  it("a check that holds leaves the next one to answer, then the explanations", async () => {
    const batch = new WriteBatch(deps());
    batch.add(guardStatement(batch.deps.db, "codeSpent", violated, holds));
    batch.explainRollback(() => Promise.reject(conflict("the slug was just taken")));
    await expect(batch.commit()).rejects.toMatchObject({ statusCode: 409, detail: "the slug was just taken" });
  });

  it("when no check refuses, the batch's own error goes on (a 500, not a refusal)", async () => {
    const batch = new WriteBatch(deps());
    batch.add(guardStatement(batch.deps.db, "employeeQuota", violated, holds));
    const error = await batch.commit().catch((err: unknown) => err);
    expect(error).toBeInstanceOf(Error);
    expect(error).not.toHaveProperty("statusCode");
  });

  it("a check that cannot be asked leaves the batch's error as it is", async () => {
    const batch = new WriteBatch(deps());
    batch.add(guardStatement(batch.deps.db, "seats", violated, () => Promise.reject(new Error("D1 is down"))));
    batch.explainRollback(() => Promise.reject(conflict("never asked")));
    const error = await batch.commit().catch((err: unknown) => err);
    expect(error).not.toHaveProperty("statusCode");
    expect(String(error)).not.toMatch(/D1 is down/);
  });

  it("a batch that commits asks no check", async () => {
    const batch = new WriteBatch(deps());
    let asked = false;
    batch.add(
      guardStatement(batch.deps.db, "seats", sql`0`, async () => {
        asked = true;
      }),
    );
    await batch.commit();
    expect(asked).toBe(false);
  });
});

describe("one refusal shape", () => {
  it("accepted gives the answer, or throws its refusal as the API's error", () => {
    expect(accepted({ ok: true as const, value: 1 })).toEqual({ ok: true, value: 1 });
    expect(() => accepted(refusal(404, "webhook 7 does not exist"))).toThrow(
      expect.objectContaining({ statusCode: 404, detail: "webhook 7 does not exist" }),
    );
  });

  it("refused carries a 401's WWW-Authenticate and a 429's Retry-After, as lib/errors.ts's helpers do", () => {
    expect(refused(refusal(401, "gone")).headers).toEqual(unauthorized("gone").headers);
    expect(refused({ ok: false, status: 429, message: "slow down", retryAfter: 7 }).headers).toEqual({
      "Retry-After": "7",
    });
  });
});
