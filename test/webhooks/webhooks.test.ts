import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { EVENT_NAMES } from "../../src/domain/events";
import { endpointProblem } from "../../src/lib/outbound-url";
import {
  createWebhook as createWebhookRoute,
  getWebhook,
  listHistory,
  listWebhooks,
  updateWebhook,
} from "../../src/routes/webhooks/webhooks.routes";
import { answer, as, call, expectError, insertToken } from "../helpers";

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

async function createWebhook(body: Record<string, unknown>, who: "alice" | "carol" = "alice") {
  const company = who === "alice" ? 1 : 2;
  const response = await as(who).send("POST", `/companies/${company}/webhooks`, body);
  expect(response.status).toBe(201);
  return await answer(response, 201, createWebhookRoute);
}

async function webhookCount() {
  const row = await env.DB.prepare("SELECT count(*) AS n FROM webhooks").first<{ n: number }>();
  return row!.n;
}

/** A member of Acme whose only role grants `read webhooks`, for the read-but-not-write case. */
const AUDITOR_TOKEN = "pk_test_webhook_auditor";
beforeAll(async () => {
  await env.DB.batch([
    env.DB.prepare(
      "INSERT INTO people (id, first_name, last_name, created_at, updated_at) VALUES (700, 'Audrey', 'Auditor', 0, 0)",
    ),
    env.DB.prepare(
      "INSERT INTO memberships (id, company_id, person_id, created_at, updated_at) VALUES (700, 1, 700, 0, 0)",
    ),
    env.DB.prepare(
      `INSERT INTO roles (id, company_id, name, permissions) VALUES (700, 1, 'Webhook auditor', '["read webhooks"]')`,
    ),
    env.DB.prepare("INSERT INTO membership_roles (membership_id, role_id) VALUES (700, 700)"),
  ]);
  await insertToken(AUDITOR_TOKEN, { personId: 700 });
});

describe("POST /companies/{company_id}/webhooks", () => {
  it("creates a webhook with a generated Standard Webhooks secret (201)", async () => {
    const before = Date.now();
    const response = await as("alice").send("POST", "/companies/1/webhooks", {
      endpoint: "https://hooks.acme.example/privacy",
      event: "scan:found",
      active: true,
    });
    expect(response.status).toBe(201);
    const webhook = await answer(response, 201, createWebhookRoute);
    expect(Object.keys(webhook).sort()).toEqual(
      ["active", "created_at", "disabled_reason", "endpoint", "event", "id", "secret", "updated_at"].sort(),
    );
    expect(webhook).toMatchObject({
      endpoint: "https://hooks.acme.example/privacy",
      event: "scan:found",
      active: true,
      disabled_reason: null,
    });
    expect(Number.isInteger(webhook.id)).toBe(true);
    expect(webhook.created_at).toMatch(ISO);
    expect(webhook.updated_at).toBe(webhook.created_at);
    expect(Date.parse(webhook.created_at)).toBeGreaterThanOrEqual(before - 1000);
    // whsec_ + base64 of at least 24 random bytes
    expect(webhook.secret).toMatch(/^whsec_[A-Za-z0-9+/]+={0,2}$/);
    expect(atob(webhook.secret.slice(6)).length).toBeGreaterThanOrEqual(24);
  });

  it("gives every webhook its own secret and defaults active to true", async () => {
    const a = await createWebhook({ endpoint: "https://hooks.acme.example/a", event: "person:created" });
    const b = await createWebhook({ endpoint: "https://hooks.acme.example/b", event: "person:created" });
    expect(a.active).toBe(true);
    expect(a.secret).not.toBe(b.secret);
    expect(b.id).toBeGreaterThan(a.id);
  });

  it("accepts every event name of docs/decisions.md", async () => {
    for (const event of EVENT_NAMES) {
      const webhook = await createWebhook({ endpoint: "https://hooks.acme.example/all", event, active: false });
      expect(webhook.event).toBe(event);
      expect(webhook.active).toBe(false);
    }
  });

  it("answers an unknown event with 400 listing the valid names, and writes nothing", async () => {
    const before = await webhookCount();
    const response = await as("alice").send("POST", "/companies/1/webhooks", {
      endpoint: "https://hooks.acme.example/privacy",
      event: "scan:exploded",
    });
    const message = await expectError(response, 400, "Bad Request");
    expect(message).toContain("`event`");
    for (const name of EVENT_NAMES) expect(message).toContain(name);
    expect(await webhookCount()).toBe(before);
  });

  it.each([
    ["not a URL", "hooks.acme.example/privacy", "absolute URL"],
    ["another scheme", "ftp://hooks.acme.example/privacy", "https://"],
    ["credentials", "https://user:secret@hooks.acme.example/privacy", "credentials"],
    ["a username alone", "https://user@hooks.acme.example/privacy", "credentials"],
  ])("refuses an endpoint with %s (400, nothing written)", async (_, endpoint, expected) => {
    const before = await webhookCount();
    const response = await as("alice").send("POST", "/companies/1/webhooks", { endpoint, event: "scan:found" });
    const message = await expectError(response, 400, "Bad Request");
    expect(message).toContain("`endpoint`");
    expect(message).toContain(expected);
    expect(await webhookCount()).toBe(before);
  });

  it("names every missing or wrong field", async () => {
    const response = await as("alice").send("POST", "/companies/1/webhooks", { active: "yes" });
    const message = await expectError(response, 400, "Bad Request");
    expect(message).toContain("`endpoint`");
    expect(message).toContain("`event`");
    expect(message).toContain("`active`");
  });

  it("allows http:// and loopback endpoints in development (the test environment)", async () => {
    const webhook = await createWebhook({ endpoint: "http://127.0.0.1:8080/hook", event: "scan:found" });
    expect(webhook.endpoint).toBe("http://127.0.0.1:8080/hook");
    await createWebhook({ endpoint: "http://localhost:3000/hook", event: "scan:found" });
  });

  it("refuses http:// and loopback endpoints outside development", () => {
    expect(endpointProblem("https://hooks.acme.example/x", "production")).toBeNull();
    expect(endpointProblem("http://hooks.acme.example/x", "production")).toContain("https://");
    expect(endpointProblem("https://localhost/x", "production")).toContain("localhost");
    expect(endpointProblem("https://api.localhost/x", "production")).toContain("localhost");
    expect(endpointProblem("https://127.0.0.1:8443/x", "production")).toContain("loopback");
    expect(endpointProblem("https://[::1]/x", "production")).toContain("loopback");
    expect(endpointProblem("https://a:b@hooks.acme.example/x", "production")).toContain("credentials");
    expect(endpointProblem("http://localhost/x", "development")).toBeNull();
  });

  it("401 without a token, 403 without `write webhooks`, 404 for another tenant", async () => {
    const body = { endpoint: "https://hooks.acme.example/x", event: "scan:found" };
    const before = await webhookCount();
    await expectError(await call("/companies/1/webhooks", { method: "POST", body }), 401, "Unauthorized");
    await expectError(await as("bob").send("POST", "/companies/1/webhooks", body), 403, "Forbidden");
    await expectError(
      await call("/companies/1/webhooks", { method: "POST", body, token: AUDITOR_TOKEN }),
      403,
      "Forbidden",
    );
    await expectError(await as("carol").send("POST", "/companies/1/webhooks", body), 404, "Not Found");
    await expectError(await as("scanner").send("POST", "/companies/1/webhooks", body), 403, "Forbidden");
    expect(await webhookCount()).toBe(before);
  });
});

describe("GET /companies/{company_id}/webhooks[/{id}]", () => {
  it("lists the company's webhooks and reads one", async () => {
    const mine = await createWebhook({ endpoint: "https://hooks.acme.example/list", event: "exposure:created" });
    const theirs = await createWebhook({ endpoint: "https://hooks.globex.example/list", event: "scan:found" }, "carol");

    const list = await as("alice").get("/companies/1/webhooks");
    expect(list.status).toBe(200);
    const webhooks = await answer(list, 200, listWebhooks);
    expect(webhooks).toContainEqual(mine);
    expect(webhooks.map((w) => w.id)).not.toContain(theirs.id);
    expect(webhooks.map((w) => w.id)).toEqual([...webhooks.map((w) => w.id)].sort((a, b) => a - b));

    const one = await as("alice").get(`/companies/1/webhooks/${mine.id}`);
    expect(one.status).toBe(200);
    expect(await one.json()).toEqual(mine);

    // Readable with `read webhooks` alone.
    expect((await call(`/companies/1/webhooks/${mine.id}`, { token: AUDITOR_TOKEN })).status).toBe(200);
  });

  it("404 for another tenant's webhook, an unknown id or a non-numeric id", async () => {
    const theirs = await createWebhook({ endpoint: "https://hooks.globex.example/x", event: "scan:found" }, "carol");
    await expectError(await as("alice").get(`/companies/1/webhooks/${theirs.id}`), 404, "Not Found");
    await expectError(await as("alice").get("/companies/1/webhooks/999999"), 404, "Not Found");
    const message = await expectError(await as("alice").get("/companies/1/webhooks/abc"), 404, "Not Found");
    expect(message).toContain("`id`");
  });

  it("401 without a token, 403 without `read webhooks`, 404 for a non-member", async () => {
    const mine = await createWebhook({ endpoint: "https://hooks.acme.example/auth", event: "scan:found" });
    for (const path of ["/companies/1/webhooks", `/companies/1/webhooks/${mine.id}`]) {
      await expectError(await call(path), 401, "Unauthorized");
      await expectError(await as("bob").get(path), 403, "Forbidden");
      await expectError(await as("carol").get(path), 404, "Not Found");
    }
  });
});

describe("PATCH /companies/{company_id}/webhooks/{id}", () => {
  it("deactivates and reactivates a webhook (200)", async () => {
    const webhook = await createWebhook({ endpoint: "https://hooks.acme.example/patch", event: "scan:found" });
    await new Promise((resolve) => setTimeout(resolve, 5));

    const off = await as("alice").send("PATCH", `/companies/1/webhooks/${webhook.id}`, { active: false });
    expect(off.status).toBe(200);
    const updated = await answer(off, 200, updateWebhook);
    expect(updated).toEqual({ ...webhook, active: false, updated_at: updated.updated_at });
    expect(Date.parse(updated.updated_at)).toBeGreaterThan(Date.parse(webhook.updated_at));
    expect((await answer(await as("alice").get(`/companies/1/webhooks/${webhook.id}`), 200, getWebhook)).active).toBe(
      false,
    );

    const on = await as("alice").send("PATCH", `/companies/1/webhooks/${webhook.id}`, { active: true });
    expect((await answer(on, 200, updateWebhook)).active).toBe(true);
  });

  it("400 without a boolean `active`, changing nothing", async () => {
    const webhook = await createWebhook({ endpoint: "https://hooks.acme.example/patch2", event: "scan:found" });
    for (const body of [{}, { active: "no" }, { active: 0 }]) {
      const message = await expectError(
        await as("alice").send("PATCH", `/companies/1/webhooks/${webhook.id}`, body),
        400,
        "Bad Request",
      );
      expect(message).toContain("`active`");
    }
    expect(await (await as("alice").get(`/companies/1/webhooks/${webhook.id}`)).json()).toEqual(webhook);
  });

  it("404 for another tenant's webhook (left unchanged), 403 without `write webhooks`", async () => {
    const theirs = await createWebhook({ endpoint: "https://hooks.globex.example/p", event: "scan:found" }, "carol");
    await expectError(
      await as("alice").send("PATCH", `/companies/1/webhooks/${theirs.id}`, { active: false }),
      404,
      "Not Found",
    );
    await expectError(
      await as("alice").send("PATCH", `/companies/2/webhooks/${theirs.id}`, { active: false }),
      404,
      "Not Found",
    );
    expect((await answer(await as("carol").get(`/companies/2/webhooks/${theirs.id}`), 200, getWebhook)).active).toBe(
      true,
    );
    const mine = await createWebhook({ endpoint: "https://hooks.acme.example/p", event: "scan:found" });
    await expectError(
      await as("bob").send("PATCH", `/companies/1/webhooks/${mine.id}`, { active: false }),
      403,
      "Forbidden",
    );
    await expectError(
      await call(`/companies/1/webhooks/${mine.id}`, { method: "PATCH", body: { active: false } }),
      401,
      "Unauthorized",
    );
  });
});

describe("DELETE /companies/{company_id}/webhooks/{id}", () => {
  it("deletes permanently (204), then 404", async () => {
    const webhook = await createWebhook({ endpoint: "https://hooks.acme.example/delete", event: "scan:found" });
    const response = await as("alice").send("DELETE", `/companies/1/webhooks/${webhook.id}`);
    expect(response.status).toBe(204);
    expect(await response.text()).toBe("");
    await expectError(await as("alice").get(`/companies/1/webhooks/${webhook.id}`), 404, "Not Found");
    await expectError(await as("alice").send("DELETE", `/companies/1/webhooks/${webhook.id}`), 404, "Not Found");
    const list = await answer(await as("alice").get("/companies/1/webhooks"), 200, listWebhooks);
    expect(list.map((w) => w.id)).not.toContain(webhook.id);
  });

  it("keeps the company's history of a deleted webhook", async () => {
    const webhook = await createWebhook({ endpoint: "https://hooks.acme.example/keep", event: "scan:failed" });
    await env.DB.prepare(
      `INSERT INTO webhook_deliveries (id, company_id, webhook_id, event, payload, status, result, created_at, updated_at)
       VALUES ('kept-after-delete', 1, ?, 'scan:failed', '{"scan_id":"k"}', 'success', '200', 1000, 1000)`,
    )
      .bind(webhook.id)
      .run();
    expect((await as("alice").send("DELETE", `/companies/1/webhooks/${webhook.id}`)).status).toBe(204);
    const history = await answer(
      await as("alice").get("/companies/1/webhooks/history?end_date=1970-01-02"),
      200,
      listHistory,
    );
    expect(history.map((entry) => entry.id)).toContain("kept-after-delete");
  });

  it("404 for another tenant's webhook (which stays), 403 without `write webhooks`", async () => {
    const theirs = await createWebhook({ endpoint: "https://hooks.globex.example/d", event: "scan:found" }, "carol");
    await expectError(await as("alice").send("DELETE", `/companies/1/webhooks/${theirs.id}`), 404, "Not Found");
    expect((await as("carol").get(`/companies/2/webhooks/${theirs.id}`)).status).toBe(200);
    const mine = await createWebhook({ endpoint: "https://hooks.acme.example/d", event: "scan:found" });
    await expectError(await as("bob").send("DELETE", `/companies/1/webhooks/${mine.id}`), 403, "Forbidden");
    await expectError(
      await call(`/companies/1/webhooks/${mine.id}`, { method: "DELETE", token: AUDITOR_TOKEN }),
      403,
      "Forbidden",
    );
    expect((await as("alice").get(`/companies/1/webhooks/${mine.id}`)).status).toBe(200);
  });
});

describe("GET /companies/{company_id}/webhooks/history", () => {
  // Rows in January 2020, so the filters below see only these whatever else the file wrote.
  const t = (day: number, hour = 12) => Date.UTC(2020, 0, day, hour);
  const JANUARY = "start_date=2020-01-01&end_date=2020-02-01";

  beforeAll(async () => {
    const rows = [
      ["h-1", 1, "scan:started", t(1), "success", "200"],
      ["h-2", 1, "scan:found", t(2), "dispatched", "500"],
      ["h-3", 1, "exposure:created", t(3), "pending", ""],
      ["h-4", 1, "scan:found", t(4), "failed", "error: connection refused"],
      ["h-5", 1, "scan:completed", t(5), "success", "204"],
      ["h-globex", 2, "scan:found", t(3), "success", "200"],
    ] as const;
    await env.DB.batch(
      rows.map(([id, company, event, at, status, result]) =>
        env.DB.prepare(
          "INSERT INTO webhook_deliveries (id, company_id, event, payload, status, result, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        ).bind(id, company, event, JSON.stringify({ scan_id: id, person_id: 2 }), status, result, at, at),
      ),
    );
  });

  const history = async (query: string, who: "alice" | "carol" = "alice") => {
    const company = who === "alice" ? 1 : 2;
    const response = await as(who).get(`/companies/${company}/webhooks/history?${query}`);
    expect(response.status).toBe(200);
    return { response, entries: await answer(response, 200, listHistory) };
  };

  it("is served at /webhooks/history, not taken for a webhook id", async () => {
    const response = await as("alice").get("/companies/1/webhooks/history");
    expect(response.status).toBe(200);
    expect(Array.isArray(await response.json())).toBe(true);
  });

  it("returns the company's entries newest first, in the [seed 2.18] shape", async () => {
    const { entries } = await history(JANUARY);
    expect(entries.map((entry) => entry.id)).toEqual(["h-5", "h-4", "h-3", "h-2", "h-1"]);
    expect(entries[1]).toEqual({
      id: "h-4",
      event: "scan:found",
      payload: { scan_id: "h-4", person_id: 2 },
      status: "failed",
      result: "error: connection refused",
      created_at: "2020-01-04T12:00:00.000Z",
    });
    // Only this company's.
    expect((await history(JANUARY, "carol")).entries.map((entry) => entry.id)).toEqual(["h-globex"]);
  });

  it("filters by start_date (inclusive) and end_date (exclusive), with offsets or bare dates", async () => {
    expect((await history("start_date=2020-01-03T12:00:00Z&end_date=2020-01-05")).entries.map((e) => e.id)).toEqual([
      "h-4",
      "h-3",
    ]);
    expect(
      (await history("start_date=2020-01-02T13:00:00%2B01:00&end_date=2020-01-03T12:00:00Z")).entries.map((e) => e.id),
    ).toEqual(["h-2"]);
  });

  it("filters by one type or a comma-separated list", async () => {
    expect((await history(`${JANUARY}&type=scan:found`)).entries.map((e) => e.id)).toEqual(["h-4", "h-2"]);
    expect((await history(`${JANUARY}&type=scan:started,exposure:created`)).entries.map((e) => e.id)).toEqual([
      "h-3",
      "h-1",
    ]);
  });

  it("pages with X-Total-Count and Link", async () => {
    const first = await history(`${JANUARY}&per_page=2`);
    expect(first.entries.map((e) => e.id)).toEqual(["h-5", "h-4"]);
    expect(first.response.headers.get("X-Total-Count")).toBe("5");
    expect(first.response.headers.get("Link")).toContain('rel="next"');
    expect(first.response.headers.get("Link")).toContain("page=2");

    const last = await history(`${JANUARY}&per_page=2&page=3`);
    expect(last.entries.map((e) => e.id)).toEqual(["h-1"]);
    expect(last.response.headers.get("Link")).toContain('rel="prev"');
    expect(last.response.headers.get("Link")).not.toContain('rel="next"');

    const beyond = await history(`${JANUARY}&per_page=2&page=9`);
    expect(beyond.entries).toEqual([]);
    expect(beyond.response.headers.get("X-Total-Count")).toBe("5");
  });

  it.each([
    ["type=scan:exploded", "`type`"],
    ["type=scan:found,nope", "nope"],
    ["start_date=yesterday", "`start_date`"],
    ["end_date=2020-13-01", "`end_date`"],
    ["start_date=2020-02-01&end_date=2020-01-01", "`end_date`"],
    ["per_page=1001", "`per_page`"],
    ["per_page=0", "`per_page`"],
    ["page=0", "`page`"],
  ])("400 for %s", async (query, field) => {
    const message = await expectError(
      await as("alice").get(`/companies/1/webhooks/history?${query}`),
      400,
      "Bad Request",
    );
    expect(message).toContain(field);
  });

  it("lists the valid event names when a type is unknown", async () => {
    const message = await expectError(
      await as("alice").get("/companies/1/webhooks/history?type=scan:exploded"),
      400,
      "Bad Request",
    );
    for (const name of EVENT_NAMES) expect(message).toContain(name);
  });

  it("401 without a token, 403 without `read webhooks`, 404 for a non-member", async () => {
    await expectError(await call("/companies/1/webhooks/history"), 401, "Unauthorized");
    await expectError(await as("bob").get("/companies/1/webhooks/history"), 403, "Forbidden");
    await expectError(await as("carol").get("/companies/1/webhooks/history"), 404, "Not Found");
    expect((await call("/companies/1/webhooks/history", { token: AUDITOR_TOKEN })).status).toBe(200);
  });
});
