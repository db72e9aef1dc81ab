import { env } from "cloudflare:workers";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { rotateProviderKeys } from "../../src/routes/admin/providers.routes";
import { answer, call, countD1, insertToken } from "../helpers";

/**
 * The operator's key rotation (`POST /internal/provider-keys/rotate`) is one
 * Worker invocation: at most 1,000 KV operations and 1,000 subrequests
 * (https://developers.cloudflare.com/workers/platform/limits/), however many
 * Twilio auth tokens wait; `remaining` says when to call again.
 */
const ADMIN = `sk_rotation_admin_${crypto.randomUUID().replaceAll("-", "")}`;
const TOKENS = 1_000;
const tag = `rot${Date.now().toString(36)}`;

beforeAll(async () => {
  await insertToken(ADMIN, { serviceName: "operator", scopes: ["platform:admin"] });
  // Provider tokens whose Twilio auth token an older version stored in clear: all due for sealing.
  await env.DB.prepare(
    `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?)
     INSERT INTO access_tokens (token_hash, prefix, service_name, scopes, signing, created_at)
     SELECT ? || '-' || i, 'sk_rot__', ? || i, '["calls:lookup"]',
            '{"kind":"twilio","authToken":"0123456789abcdef0123456789abcdef"}', 0 FROM n`,
  )
    .bind(TOKENS, tag, tag)
    .run();
});

afterAll(async () => {
  await env.DB.prepare("DELETE FROM access_tokens WHERE token_hash LIKE ?").bind(`${tag}-%`).run();
});

afterEach(() => vi.restoreAllMocks());

/** Counts the KV operations of every namespace from now on. */
function countKv() {
  const counts = { operations: 0 };
  const namespace = Object.getPrototypeOf(env.TRUST_INDEX) as Record<string, (...args: unknown[]) => unknown>;
  for (const method of ["get", "getWithMetadata", "put", "delete", "list"]) {
    const original = namespace[method]!;
    vi.spyOn(namespace, method as never).mockImplementation(function (this: unknown, ...args: unknown[]) {
      counts.operations++;
      return original.apply(this, args);
    } as never);
  }
  return counts;
}

describe("POST /internal/provider-keys/rotate on a deployment with many Twilio-signed tokens", () => {
  it("stays within one invocation's 1,000 KV operations and subrequests, and says what remains", async () => {
    const kv = countKv();
    const d1 = countD1();
    const rotation = await answer(
      await call("/internal/provider-keys/rotate", { method: "POST", token: ADMIN }),
      200,
      rotateProviderKeys,
    );
    const { operations } = kv;
    const { rounds } = d1;
    vi.restoreAllMocks();
    expect(operations, "KV operations of one rotation").toBeLessThanOrEqual(1_000);
    expect(operations + rounds, "KV operations and D1 round trips of one rotation").toBeLessThanOrEqual(1_000);
    expect(rotation).toMatchObject({ remaining: true });
    expect(rotation.resealed).toBeGreaterThan(0);

    // Called again while `remaining`, the operator's command seals every one of them.
    let last = rotation;
    for (let i = 0; last.remaining && i < TOKENS; i++) {
      last = await answer(
        await call("/internal/provider-keys/rotate", { method: "POST", token: ADMIN }),
        200,
        rotateProviderKeys,
      );
    }
    const clear = await env.DB.prepare(
      "SELECT count(*) AS n FROM access_tokens WHERE token_hash LIKE ? AND json_extract(signing, '$.sealed') IS NULL",
    )
      .bind(`${tag}-%`)
      .first<{ n: number }>();
    expect(clear!.n).toBe(0);
  });
});
