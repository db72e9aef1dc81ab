import { describe, expect, it } from "vitest";
import { as, call, expectError } from "../helpers";

describe("request pipeline", () => {
  it("gives every response an X-Request-Id, echoing a well-formed inbound one", async () => {
    const generated = await call("/healthz");
    expect(generated.headers.get("X-Request-Id")).toMatch(/^[0-9a-f-]{36}$/);

    const echoed = await call("/healthz", { headers: { "X-Request-Id": "trace-abc-123" } });
    expect(echoed.headers.get("X-Request-Id")).toBe("trace-abc-123");

    const error = await call("/companies/1");
    expect(error.status).toBe(401);
    expect(error.headers.get("X-Request-Id")).toMatch(/^[0-9a-f-]{36}$/);
  });

  it("answers /healthz without auth", async () => {
    const response = await call("/healthz");
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ ok: true });
  });

  it("answers unknown routes and wrong methods with 404 in the error body", async () => {
    const unknown = await call("/no/such/route");
    expect(await expectError(unknown, 404, "Not Found")).toContain("GET /no/such/route");
    expect(unknown.headers.get("X-Request-Id")).toBeTruthy();

    const wrongMethod = await as("alice").send("DELETE", "/companies/1");
    expect(await expectError(wrongMethod, 404, "Not Found")).toContain("DELETE /companies/1");
  });

  it("answers 404 when a known path's method has no route, even where another route's {id} would match", async () => {
    for (const [method, path] of [
      ["GET", "/contacts/sync"],
      ["PATCH", "/companies/1/webhooks/history"],
      ["DELETE", "/companies/1/employees/exposures"],
    ]) {
      expect(await expectError(await as("alice").send(method!, path!), 404, "Not Found")).toContain(
        `${method} ${path}`,
      );
    }
  });

  it("rejects malformed JSON with 400", async () => {
    const response = await as("alice").send("PUT", "/apps/buzz/encryption", '{"hash": "x",');
    expect(await expectError(response, 400, "Bad Request")).toMatch(/malformed JSON/i);
  });

  it("rejects a body that is not JSON with 400", async () => {
    const response = await as("alice").send("PUT", "/apps/buzz/encryption", "hash=x&e2e_id=y", {
      headers: { "Content-Type": "application/x-www-form-urlencoded" },
    });
    expect(await expectError(response, 400, "Bad Request")).toContain("Content-Type: application/json");
  });

  it("rejects a missing body with 400", async () => {
    const response = await as("alice").send("PUT", "/apps/buzz/encryption", "", {
      headers: { "Content-Type": "application/json" },
    });
    await expectError(response, 400, "Bad Request");
  });

  it("names every offending field in one validation message", async () => {
    const response = await as("alice").send("PUT", "/apps/buzz/encryption", { hash: "", extra: 1 });
    const message = await expectError(response, 400, "Bad Request");
    expect(message).toContain("invalid body");
    expect(message).toContain("`hash`");
    expect(message).toContain("`e2e_id` is required");
  });

  it("rejects bodies over 1 MiB with 413", async () => {
    const response = await as("alice").send("PUT", "/apps/buzz/encryption", {
      hash: "x".repeat(1024 * 1024 + 1),
      e2e_id: "y",
    });
    await expectError(response, 413, "Payload Too Large");
  });

  it("saves valid input and reads it back on the next write (the body round-trips)", async () => {
    const response = await as("bob").send("PUT", "/apps/buzz/encryption", { hash: "  h-1 ", e2e_id: "e2e-bob" });
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ hash: "h-1", e2e_id: "e2e-bob" });
  });

  it("writes nothing when the input is rejected", async () => {
    await as("carol").send("PUT", "/apps/buzz/encryption", { hash: "kept", e2e_id: "kept-id" });
    const rejected = await as("carol").send("PUT", "/apps/buzz/encryption", { hash: "changed", e2e_id: "" });
    expect(rejected.status).toBe(400);
    const { env } = await import("cloudflare:workers");
    const row = await env.DB.prepare("SELECT encryption_hash, e2e_id FROM people WHERE id = 3").first();
    expect(row).toEqual({ encryption_hash: "kept", e2e_id: "kept-id" });
  });
});
