import { createExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it, vi } from "vitest";
import worker from "../../src/index";
import { endpointProblem } from "../../src/lib/outbound-url";
import { getHistoryEntry } from "../../src/routes/webhooks/webhooks.routes";
import { answer, as, expectError } from "../helpers";
import { fileTokens } from "../principals";
import { deliver, deliveryRow, newDelivery, newWebhook, receiver } from "../webhook-receiver";

/**
 * Which endpoints may receive webhooks outside development (docs/webhooks.md,
 * "Endpoints the service refuses"). The tests run with ENVIRONMENT =
 * development (wrangler.toml), so the production rule is checked on the
 * module and through the Worker called with ENVIRONMENT = production.
 */

afterEach(() => {
  vi.restoreAllMocks();
});

const REFUSED = [
  // private, loopback, link-local, CGNAT, unspecified, multicast, documentation
  "https://10.0.0.1/",
  "https://192.168.1.1/",
  "https://172.16.0.1/",
  "https://172.31.255.255/",
  "https://127.0.0.1/",
  "https://127.1.2.3:8443/x",
  "https://169.254.169.254/latest/meta-data",
  "https://100.64.0.1/",
  "https://0.0.0.0/",
  "https://224.0.0.1/",
  "https://192.0.2.10/",
  "https://198.51.100.7/",
  "https://203.0.113.9/",
  "https://255.255.255.255/",
  // other spellings of 127.0.0.1 and 10.0.0.1
  "https://2130706433/",
  "https://0x7f000001/",
  "https://0x7f.1/",
  "https://0177.0.0.1/",
  "https://017700000001/",
  "https://127.1/",
  "https://127.0.0.1./",
  "https://0xa.0.0.1/",
  "https://167772161/",
  // IPv6
  "https://[::1]/",
  "https://[::]/",
  "https://[0:0:0:0:0:0:0:1]/",
  "https://[::ffff:127.0.0.1]/",
  "https://[::ffff:7f00:1]/",
  "https://[::ffff:10.0.0.1]/",
  "https://[::ffff:169.254.169.254]/",
  "https://[::127.0.0.1]/",
  "https://[64:ff9b::a00:1]/",
  "https://[64:ff9b::808:808]/", // NAT64 reaches a translator's network whatever it embeds
  "https://[64:ff9b:1::a00:1]/",
  "https://[64:ff9b:1:2::1]/",
  "https://[2002:c0a8:101::1]/",
  "https://[fd00::1]/",
  "https://[fc00::abcd]/",
  "https://[fe80::1]/",
  "https://[ff02::1]/",
  "https://[2001:db8::1]/",
  // names
  "https://localhost/",
  "https://localhost./",
  "https://LOCALHOST/",
  "https://api.localhost/",
  "https://printer.local/",
  "https://printer.home.arpa/",
  "https://printer.lan/",
  "https://router.localdomain/",
  "https://LAN./",
  "https://metadata.google.internal/",
  "https://intranet/",
  "https://127.0.0.1.nip.io/",
  "https://app.10.0.0.1.nip.io/",
  "https://app-192-168-1-1.sslip.io/",
  "https://7f000001.nip.io/",
  "https://10.0.0.1.xip.io./",
  "https://nip.io.nip.io/",
  "https://anything.localtest.me/",
  "https://lvh.me/",
];

const ALLOWED = [
  "https://hooks.acme.example/privacy",
  "https://8.8.8.8/",
  "https://93.184.216.34:8443/x",
  "https://[2606:4700:4700::1111]/",
  "https://[::ffff:8.8.8.8]/",
  "https://8.8.8.8.nip.io/",
  "https://app-1-1-1-1.sslip.io/",
  "https://hooks.acme.example./x",
  "https://172.32.0.1/",
  "https://100.128.0.1/",
  "https://locallhost.example/",
];

describe("endpointProblem outside development", () => {
  it.each(REFUSED)("refuses %s", (endpoint) => {
    expect(endpointProblem(endpoint, "production")).toMatch(/^must name a public host \(.+\)$/);
  });

  it.each(ALLOWED)("allows %s", (endpoint) => {
    expect(endpointProblem(endpoint, "production")).toBeNull();
  });

  it("wants https without credentials", () => {
    expect(endpointProblem("http://hooks.acme.example/", "production")).toContain("https://");
    expect(endpointProblem("https://user:pw@hooks.acme.example/", "production")).toContain("credentials");
    expect(endpointProblem("https://user@hooks.acme.example/", "production")).toContain("credentials");
  });

  it("allows http:// and private hosts in development", () => {
    for (const endpoint of ["http://localhost:3000/", "https://10.0.0.1/", "http://[::1]:8080/"]) {
      expect(endpointProblem(endpoint, "development")).toBeNull();
    }
    expect(endpointProblem("https://u:p@localhost/", "development")).toContain("credentials");
  });
});

/** The Worker as deployed: ENVIRONMENT = production. */
function production(path: string, method: string, body?: unknown) {
  const request = new Request(`https://api.test${path}`, {
    method,
    headers: {
      Authorization: `Bearer ${fileTokens.alice}`,
      "Content-Type": "application/json",
      "CF-Connecting-IP": "198.51.100.77",
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return worker.fetch!(request as never, { ...env, ENVIRONMENT: "production" }, createExecutionContext());
}

describe("POST and PATCH /companies/{company_id}/webhooks in production", () => {
  it.each([
    "https://10.0.0.1/",
    "https://[::ffff:127.0.0.1]/",
    "https://localhost./",
    "https://127.0.0.1.nip.io/",
    "https://169.254.169.254/",
  ])("refuses %s with 400, writing nothing", async (endpoint) => {
    const before = await env.DB.prepare("SELECT count(*) AS n FROM webhooks").first<{ n: number }>();
    const message = await expectError(
      await production("/companies/1/webhooks", "POST", { endpoint, event: "scan:found" }),
      400,
      "Bad Request",
    );
    expect(message).toContain("`endpoint` must name a public host");
    const after = await env.DB.prepare("SELECT count(*) AS n FROM webhooks").first<{ n: number }>();
    expect(after!.n).toBe(before!.n);
  });

  it("accepts a public https endpoint", async () => {
    const response = await production("/companies/1/webhooks", "POST", {
      endpoint: "https://hooks.acme.example/prod",
      event: "scan:found",
    });
    expect(response.status).toBe(201);
  });

  it("will not switch on a webhook whose endpoint is refused now", async () => {
    const webhook = await newWebhook({ endpoint: "http://127.0.0.1:9/hook", active: false });
    const message = await expectError(
      await production(`/companies/1/webhooks/${webhook.id}`, "PATCH", { active: true }),
      400,
      "Bad Request",
    );
    expect(message).toContain("cannot be activated");
    // Switching off is always possible.
    expect((await production(`/companies/1/webhooks/${webhook.id}`, "PATCH", { active: false })).status).toBe(200);
  });
});

describe("the rule again at delivery time", () => {
  it("a delivery to a refused endpoint fails as `invalid endpoint` without any request", async () => {
    const webhook = await newWebhook({ endpoint: "https://receiver.test.internal/hook" });
    const deliveryId = await newDelivery(webhook.id);
    const calls = receiver(() => new Response(null, { status: 200 }));
    const fetchSpy = vi.mocked(globalThis.fetch);
    const result = await deliver(deliveryId, 1, { ENVIRONMENT: "production" });
    expect(fetchSpy).not.toHaveBeenCalled();
    expect(calls).toHaveLength(0);
    expect(result.explicitAcks).toEqual(["msg-1"]);
    expect(result.retryMessages).toEqual([]);
    expect(await deliveryRow(deliveryId)).toMatchObject({ status: "failed", result: "invalid endpoint", attempts: 1 });

    const entry = await answer(
      await as("alice").get(`/companies/1/webhooks/history/${deliveryId}`),
      200,
      getHistoryEntry,
    );
    expect(entry.attempts).toEqual([expect.objectContaining({ result: "invalid endpoint", duration_ms: 0 })]);
  });

  it("a network failure is recorded as `connection failed`, not the error's text", async () => {
    const webhook = await newWebhook();
    const deliveryId = await newDelivery(webhook.id);
    receiver(() => {
      throw new TypeError("getaddrinfo ENOTFOUND internal-db.corp 10.1.2.3:5432");
    });
    await deliver(deliveryId);
    const row = await deliveryRow(deliveryId);
    expect(row).toMatchObject({ status: "dispatched", result: "connection failed" });
    const entry = await (await as("alice").get(`/companies/1/webhooks/history/${deliveryId}`)).text();
    expect(entry).not.toContain("ENOTFOUND");
    expect(entry).not.toContain("10.1.2.3");
  });
});
