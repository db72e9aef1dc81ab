import { describe, expect, it } from "vitest";
import { call, DEMO, expectError, insertToken } from "./helpers";

/** Sends `count` requests and returns the responses in order. */
async function burst(count: number, send: () => Promise<Response>): Promise<Response[]> {
  const responses: Response[] = [];
  for (let i = 0; i < count; i++) responses.push(await send());
  return responses;
}

describe("rate limiting (DECISIONS §8)", () => {
  it("allows 300 unauthenticated requests per minute per IP, then answers 429 with Retry-After", async () => {
    const ip = "192.0.2.77";
    const responses = await burst(301, () => call("/companies/1", { headers: { "CF-Connecting-IP": ip } }));
    expect(responses.slice(0, 300).every((r) => r.status === 401)).toBe(true);
    const limited = responses[300]!;
    expect(limited.headers.get("Retry-After")).toBe("60");
    expect(await expectError(limited, 429, "Too Many Requests")).toContain("300");

    // Another address is not affected.
    expect((await call("/companies/1", { headers: { "CF-Connecting-IP": "192.0.2.78" } })).status).toBe(401);
  });

  it("allows 1000 requests per minute per token, then answers 429", async () => {
    const token = "pk_test_rate_limited_alice";
    await insertToken(token, { personId: DEMO.people.alice });
    // An unknown route is the cheapest authenticated request: it still passes the limiter.
    const responses = await burst(1001, () => call("/rate-limit-probe", { token }));
    expect(responses.slice(0, 1000).every((r) => r.status === 404)).toBe(true);
    expect(responses[1000]!.headers.get("Retry-After")).toBe("60");
    expect(await expectError(responses[1000]!, 429, "Too Many Requests")).toContain("1000");

    // The token's budget is its own: the same person's other token still works.
    expect((await call("/companies/1", { token: DEMO.tokens.alice })).status).toBe(200);
  });

  it("never limits /healthz", async () => {
    const ip = "192.0.2.99";
    const responses = await burst(320, () => call("/healthz", { headers: { "CF-Connecting-IP": ip } }));
    expect(responses.every((r) => r.status === 200)).toBe(true);
  });
});
