import { describe, expect, it } from "vitest";
import { ipBudgetKey } from "../../src/middleware/rate-limit";
import { call, DEMO, expectError, insertToken, startOfUsableWindow } from "../helpers";

/** Sends `count` requests, `concurrency` at a time; returns the statuses counted and the 429s. */
async function burst(count: number, send: () => Promise<Response>, concurrency = 25) {
  const statuses = new Map<number, number>();
  const limited: Response[] = [];
  for (let sent = 0; sent < count; sent += concurrency) {
    const batch = await Promise.all(Array.from({ length: Math.min(concurrency, count - sent) }, send));
    for (const response of batch) {
      statuses.set(response.status, (statuses.get(response.status) ?? 0) + 1);
      if (response.status === 429) limited.push(response);
      else await response.body?.cancel();
    }
  }
  return { statuses: Object.fromEntries(statuses), limited };
}

describe("rate limiting (docs/decisions.md)", { timeout: 120_000 }, () => {
  it("allows 300 unauthenticated requests per minute per IP, then answers 429 with Retry-After", async () => {
    await startOfUsableWindow(20_000);
    const ip = "192.0.2.77";
    const { statuses, limited } = await burst(301, () => call("/companies/1", { headers: { "CF-Connecting-IP": ip } }));
    expect(statuses).toEqual({ 401: 300, 429: 1 });
    expect(limited[0]!.headers.get("Retry-After")).toBe("60");
    expect(await expectError(limited[0]!, 429, "Too Many Requests")).toContain("300");

    // Another address is not affected.
    expect((await call("/companies/1", { headers: { "CF-Connecting-IP": "192.0.2.78" } })).status).toBe(401);
  });

  it("addresses of one IPv6 /64 (one subscriber's network) share the 300 a minute; another /64 has its own", async () => {
    await startOfUsableWindow(20_000);
    let n = 0;
    // A fresh interface id per request: what any host on the /64 can choose freely.
    const { statuses } = await burst(301, () =>
      call("/companies/1", { headers: { "CF-Connecting-IP": `2001:db8:77:1::${(++n).toString(16)}` } }),
    );
    expect(statuses).toEqual({ 401: 300, 429: 1 });
    expect((await call("/companies/1", { headers: { "CF-Connecting-IP": "2001:db8:77:2::1" } })).status).toBe(401);
  });

  it("an address that does not parse (a header set by hand) is its own budget, not a 500", async () => {
    const response = await call("/companies/1", { headers: { "CF-Connecting-IP": "1:2:3:4:5:6:7:8::9" } });
    expect(response.status).toBe(401);
  });

  it("one budget key per network: an IPv6 /64 whatever its spelling, an IPv4-mapped address as its IPv4", () => {
    const same = (addresses: string[]) => expect(new Set(addresses.map(ipBudgetKey)).size).toBe(1);
    same(["2001:db8:77:1::1", "2001:0DB8:0077:0001:abcd::1", "2001:db8:77:1:ffff:ffff:ffff:ffff"]);
    same(["192.0.2.1", "::ffff:192.0.2.1", "::ffff:c000:201", "0:0:0:0:0:ffff:192.0.2.1"]);
    expect(ipBudgetKey("::ffff:c000:201")).not.toBe(ipBudgetKey("::ffff:c633:6401"));
    expect(ipBudgetKey("2001:db8:77:1::1")).not.toBe(ipBudgetKey("2001:db8:77:2::1"));
  });

  it("allows 1000 requests per minute per token, then answers 429", async () => {
    await startOfUsableWindow(30_000);
    const token = "pk_test_rate_limited_alice";
    await insertToken(token, { personId: DEMO.people.alice });
    // An unknown route is the cheapest authenticated request: it still passes the limiter.
    const { statuses, limited } = await burst(1001, () => call("/rate-limit-probe", { token }));
    expect(statuses).toEqual({ 404: 1000, 429: 1 });
    expect(limited[0]!.headers.get("Retry-After")).toBe("60");
    expect(await expectError(limited[0]!, 429, "Too Many Requests")).toContain("1000");

    // The token's budget is its own: the same person's other token still works.
    expect((await call("/companies/1", { token: DEMO.tokens.alice })).status).toBe(200);
  });

  it("never limits /healthz", async () => {
    const ip = "192.0.2.99";
    const { statuses } = await burst(320, () => call("/healthz", { headers: { "CF-Connecting-IP": ip } }));
    expect(statuses).toEqual({ 200: 320 });
  });
});
