import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it, vi } from "vitest";
import { createApp } from "../../src/app";
import { failingD1 } from "../helpers";
import { fileTokens } from "../principals";

/**
 * A 500's log line (docs/security.md, "Logging") carries the error's name, a
 * redacted message, the request id and the route pattern: never SQL text,
 * bound values or the path's and query's values.
 */
const SECRET_EMAIL = "dana.secret@example.com";
const SECRET_PHONE = "+14155550142";

/** The real D1, except that every statement reading companies fails like D1 does. */
function failingDb(): D1Database {
  const db: D1Database = failingD1(
    /\bcompanies\b/,
    () => new Error(`D1_ERROR: UNIQUE constraint failed for "${SECRET_EMAIL}" and ${SECRET_PHONE}: SQLITE_CONSTRAINT`),
    {
      // Reads run in a D1 session: the session of this database fails the same way.
      withSession: () => Object.assign(Object.create(db), { getBookmark: () => null }),
      batch: () => Promise.reject(new Error(`D1_ERROR: too many SQL variables ${SECRET_EMAIL}`)),
    },
  );
  return db;
}

afterEach(() => vi.restoreAllMocks());

describe("the log line of a 500", () => {
  it("has name, redacted message, request id and route; no SQL, no bound values", async () => {
    const lines: string[] = [];
    vi.spyOn(console, "error").mockImplementation((...args: unknown[]) => void lines.push(args.map(String).join(" ")));
    const ctx = createExecutionContext();
    const response = await createApp().request(
      `/companies/1?search=${encodeURIComponent(SECRET_EMAIL)}`,
      { headers: { Authorization: `Bearer ${fileTokens.alice}`, "X-Request-Id": "req-log-test" } },
      { ...env, DB: failingDb() },
      ctx,
    );
    await waitOnExecutionContext(ctx);
    expect(response.status).toBe(500);
    const body = await response.text();
    expect(body).toContain("req-log-test");
    expect(body).not.toMatch(/select|companies|SQLITE/i);

    const line = lines.find((text) => text.includes("req-log-test"));
    expect(line, lines.join("\n")).toBeDefined();
    const logged = JSON.parse(line!) as Record<string, unknown>;
    expect(logged).toMatchObject({
      level: "error",
      requestId: "req-log-test",
      method: "GET",
      route: "/companies/:company_id",
    });
    expect(logged.name).toBe("Error");
    expect(logged.message).toContain("SQLITE_CONSTRAINT");
    for (const leak of [/select/i, /params/i, /"companies"/, SECRET_EMAIL, "4155550142", fileTokens.alice, "search="]) {
      expect(line).not.toMatch(typeof leak === "string" ? new RegExp(leak.replace(/[.+]/g, "\\$&")) : leak);
    }
  });
});
