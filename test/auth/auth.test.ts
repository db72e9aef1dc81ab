import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { as, call, captureTokenUses, DEMO, expectError, insertToken } from "../helpers";

describe("bearer authentication", () => {
  it("answers a missing token with 401 and WWW-Authenticate", async () => {
    const response = await call("/companies/1");
    expect(response.headers.get("WWW-Authenticate")).toMatch(/^Bearer/);
    expect(await expectError(response, 401, "Unauthorized")).toContain("needs a bearer token");
  });

  it("answers a malformed Authorization header with 401", async () => {
    for (const header of ["Basic YWxpY2U6c2VjcmV0", "Bearer", "Bearer two words", "Bearer bad!chars"]) {
      const response = await call("/companies/1", { headers: { Authorization: header } });
      expect(await expectError(response, 401, "Unauthorized")).toContain("Bearer <token>");
    }
  });

  it("suggests HTTP Basic only on the routes that accept it (trust-lookup and call-lookup)", async () => {
    for (const header of ["Bearer", "Bearer bad!chars", "Token abc"]) {
      const me = await expectError(await call("/me", { headers: { Authorization: header } }), 401, "Unauthorized");
      expect(me).toContain("`Bearer <token>`");
      expect(me).not.toContain("Basic");
      const lookup = await call("/apps/buzz/trust-lookup?To=%2B12025550101", { headers: { Authorization: header } });
      expect(await expectError(lookup, 401, "Unauthorized")).toContain(
        "`Bearer <token>`, or `Basic` with the token as the password",
      );
    }
    for (const path of ["/apps/buzz/trust-lookup?To=%2B12025550101", "/apps/buzz/call-lookup?To=%2B12025550101"]) {
      expect(await expectError(await call(path), 401, "Unauthorized")).toBe(
        "Unauthorized: this endpoint needs a token: `Bearer <token>`, or `Basic` with the token as the password",
      );
    }
    expect(await expectError(await call("/me"), 401, "Unauthorized")).toBe(
      "Unauthorized: this endpoint needs a bearer token (Authorization: Bearer <token>)",
    );
  });

  it("answers an unknown token with 401", async () => {
    const response = await call("/companies/1", { token: "pk_not_a_real_token" });
    expect(await expectError(response, 401, "Unauthorized")).toContain("not valid");
  });

  it("answers an expired token with 401", async () => {
    await insertToken("pk_test_expired_alice", { personId: DEMO.people.alice, expiresAt: new Date(Date.now() - 1000) });
    const response = await call("/companies/1", { token: "pk_test_expired_alice" });
    expect(await expectError(response, 401, "Unauthorized")).toContain("expired");
  });

  it("answers a revoked token with 401", async () => {
    await insertToken("pk_test_revoked_alice", { personId: DEMO.people.alice, revokedAt: new Date() });
    const response = await call("/companies/1", { token: "pk_test_revoked_alice" });
    expect(await expectError(response, 401, "Unauthorized")).toContain("revoked");
  });

  it("accepts the scheme case-insensitively", async () => {
    const response = await call("/companies/1", { headers: { Authorization: `bearer ${DEMO.tokens.alice}` } });
    expect(response.status).toBe(200);
  });

  it("refuses service tokens on person endpoints with 403", async () => {
    const response = await as("telephony").get("/companies/1");
    await expectError(response, 403, "Forbidden");
    const encryption = await as("scanner").send("PUT", "/apps/buzz/encryption", { hash: "h", e2e_id: "e" });
    await expectError(encryption, 403, "Forbidden");
  });

  it("records the person's last login when a token is first verified (through the token-uses queue)", async () => {
    await insertToken("pk_test_login_carol", { personId: DEMO.people.carol });
    const uses = captureTokenUses();
    const before = Date.now();
    expect((await call("/companies/2", { token: "pk_test_login_carol" })).status).toBe(200);
    // Sent in waitUntil; give it a moment, then the queue's consumer writes it.
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(uses.sent).toHaveLength(1);
    await uses.flush();
    const row = await env.DB.prepare("SELECT last_login_at FROM people WHERE id = ?")
      .bind(DEMO.people.carol)
      .first<{ last_login_at: number }>();
    expect(row?.last_login_at).toBeGreaterThanOrEqual(before);
  });
});

describe("company tenancy", () => {
  it("answers 404 to a non-member, never revealing the company", async () => {
    const other = await expectError(await as("carol").get("/companies/1"), 404, "Not Found");
    const missing = await expectError(await as("carol").get("/companies/999"), 404, "Not Found");
    expect(other).toBe("Not Found: company 1 does not exist");
    expect(missing).toBe("Not Found: company 999 does not exist");
  });

  it("answers 403 to a member whose roles lack the permission", async () => {
    const message = await expectError(await as("bob").get("/companies/1"), 403, "Forbidden");
    expect(message).toContain("read settings");
  });

  it("answers 404 for a company id that is not a number", async () => {
    await expectError(await as("alice").get("/companies/acme"), 404, "Not Found");
  });
});

describe("a token of the wrong kind: the 403 says what the route needs", () => {
  it.each([
    ["the telephony provider", "telephony", "/internal/company-phones", "a service token with scope `platform:admin`"],
    ["the scanner", "scanner", "/internal/status", "a service token with scope `platform:admin`"],
    ["a person", "alice", "/internal/company-phones", "a service token with scope `platform:admin`"],
    ["the telephony provider", "telephony", "/apps/buzz/heartbeat", "a person token"],
    ["the scanner", "scanner", "/companies/1", "a person token"],
    ["a person", "alice", "/apps/buzz/trust-lookup?To=%2B12025550101", "a service token with scope `calls:lookup`"],
  ] as const)("%s (%s) on %s", async (_, who, path, needed) => {
    const message = await expectError(await as(who).get(path), 403, "Forbidden");
    // Exactly what the route takes, never a kind of token it does not take.
    expect(/needs (.*?);/.exec(message)?.[1]).toBe(needed);
  });
});
