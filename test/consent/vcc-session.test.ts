import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { sha256Hex } from "../../src/lib/crypto";
import { originAllowed, publisherFrameAncestors } from "../../src/services/consent";
import { loadContainer } from "../../src/routes/vcc/vcc.routes";
import { tokenKey } from "../../src/services/token-records";
import { answer, as, call, countRows, DEMO, expectError, indexWorkApplied, insertToken } from "../helpers";

type Operation = { security?: unknown[] };
type Document = { paths: Record<string, Record<string, Operation>> };

const PUBLISHER = "https://dailynews.example";
const SET_COOKIE = /^session=(vcc_[A-Za-z0-9_-]{40,}); Path=\/apps\/vcc; HttpOnly; Secure; SameSite=None$/;

/** A new container session of `who`: the token its cookie holds. */
async function session(who: "alice" | "bob" | "carol" = "alice"): Promise<string> {
  const response = await as(who).send("POST", "/apps/vcc/session");
  expect(response.status).toBe(204);
  const match = SET_COOKIE.exec(response.headers.get("Set-Cookie") ?? "");
  expect(match).not.toBeNull();
  return match![1]!;
}

const load = async (cookie?: string) => {
  const response = await call("/apps/vcc/load_container/dailynews", {
    headers: cookie ? { Cookie: `session=${cookie}` } : {},
  });
  return answer(response, 200, loadContainer);
};

const trustOf = async (cookie: string, slug: string) =>
  (await load(cookie)).vendors.find((v) => v.slug === slug)!.trust;

const putVendorTrust = (
  trust: string | null,
  options: { cookie?: string; token?: string; origin?: string; vendor?: string; container?: string } = {},
) =>
  call(`/apps/vcc/trust/${options.container ?? "dailynews"}/${options.vendor ?? "pixelpartners"}`, {
    method: "PUT",
    token: options.token,
    body: { trust },
    headers: {
      ...(options.cookie ? { Cookie: `session=${options.cookie}` } : {}),
      ...(options.origin ? { Origin: options.origin } : {}),
    },
  });

describe("container sessions", () => {
  it("POST with a person token sets a container-scoped session cookie that signs the visitor in", async () => {
    const token = await session("alice");
    const body = await load(token);
    expect(body.is_authenticated).toBe(true);
    expect(body.vendors.map((v) => v.trust)).toEqual(["trusted", "negative", null]);
  });

  it("POST needs a person's full token", async () => {
    await expectError(await call("/apps/vcc/session", { method: "POST" }), 401, "Unauthorized");
    await expectError(await as("telephony").send("POST", "/apps/vcc/session"), 403, "Forbidden");
    const scoped = await session();
    await expectError(await call("/apps/vcc/session", { method: "POST", token: scoped }), 403, "Forbidden");
  });

  it("DELETE revokes the session and clears the cookie", async () => {
    const token = await session("bob");
    const response = await call("/apps/vcc/session", { method: "DELETE", headers: { Cookie: `session=${token}` } });
    expect(response.status).toBe(204);
    expect(response.headers.get("Set-Cookie")).toBe(
      "session=; Path=/apps/vcc; HttpOnly; Secure; SameSite=None; Max-Age=0",
    );
    expect((await load(token)).is_authenticated).toBe(false);
    await expectError(await putVendorTrust("trusted", { cookie: token }), 401, "Unauthorized");
    // Without a session there is nothing to revoke; the answer is the same.
    expect((await call("/apps/vcc/session", { method: "DELETE" })).status).toBe(204);
  });

  it("a session never outlives the device that minted it: signed out with it, expiring no later", async () => {
    const device = `pk_test_vcc_device_${crypto.randomUUID().replaceAll("-", "")}`;
    const inADay = Date.now() + 86_400_000;
    await insertToken(device, { personId: DEMO.people.bob, expiresAt: new Date(inADay) });
    const minted = await call("/apps/vcc/session", { method: "POST", token: device });
    expect(minted.status).toBe(204);
    const cookie = SET_COOKIE.exec(minted.headers.get("Set-Cookie") ?? "")![1]!;
    const { id } = (await env.DB.prepare("SELECT id FROM access_tokens WHERE token_hash = ?")
      .bind(await sha256Hex(device))
      .first<{ id: number }>())!;
    const stored = await env.DB.prepare("SELECT expires_at AS at FROM access_tokens WHERE token_hash = ?")
      .bind(await sha256Hex(cookie))
      .first<{ at: number }>();
    expect(stored!.at).toBeLessThanOrEqual(inADay);
    expect((await load(cookie)).is_authenticated).toBe(true);
    // The device signs out: its session goes with it, on the page (at once in this isolate, whose
    // cache had just verified it) and for writes.
    expect((await call(`/me/devices/${id}`, { method: "DELETE", token: device })).status).toBe(204);
    expect((await load(cookie)).is_authenticated).toBe(false);
    await expectError(await putVendorTrust("trusted", { cookie }), 401, "Unauthorized");
    // A signed-out device mints no session.
    await expectError(await call("/apps/vcc/session", { method: "POST", token: device }), 401, "Unauthorized");
  });

  it("DELETE with a made-up cookie, by anyone, records nothing for that token (no KV record, no index work)", async () => {
    const made = `vcc_made_up_${crypto.randomUUID().replaceAll("-", "")}`;
    const key = tokenKey(await sha256Hex(made));
    const response = await call("/apps/vcc/session", { method: "DELETE", headers: { Cookie: `session=${made}` } });
    expect(response.status).toBe(204);
    await indexWorkApplied([key]);
    expect(await env.TRUST_INDEX.get(key)).toBeNull();
    expect(await countRows("SELECT count(*) AS n FROM index_written WHERE key = ?", key)).toBe(0);
    expect(await countRows("SELECT count(*) AS n FROM index_work WHERE key = ?", key)).toBe(0);
  });

  it("a device keeps its 5 newest sessions: signing in again and again revokes the oldest, which stops working", async () => {
    const device = `pk_test_vcc_many_${crypto.randomUUID().replaceAll("-", "")}`;
    await insertToken(device, { personId: DEMO.people.carol });
    const cookies: string[] = [];
    for (let i = 0; i < 8; i++) {
      const minted = await call("/apps/vcc/session", { method: "POST", token: device });
      expect(minted.status).toBe(204);
      cookies.push(SET_COOKIE.exec(minted.headers.get("Set-Cookie") ?? "")![1]!);
      // The first is read once, so this isolate holds it as valid when the sixth retires it.
      if (i === 0) expect((await load(cookies[0])).is_authenticated).toBe(true);
    }
    expect((await load(cookies[0])).is_authenticated).toBe(false);
    const { id } = (await env.DB.prepare("SELECT id FROM access_tokens WHERE token_hash = ?")
      .bind(await sha256Hex(device))
      .first<{ id: number }>())!;
    const live = "SELECT count(*) AS n FROM access_tokens WHERE parent_token_id = ? AND revoked_at IS NULL";
    expect(await countRows(live, id)).toBe(5);
    await expectError(await putVendorTrust(null, { cookie: cookies[2] }), 401, "Unauthorized");
    expect((await putVendorTrust(null, { cookie: cookies[3] })).status).toBe(200);
    expect((await load(cookies[7])).is_authenticated).toBe(true);
  });

  it("a container session is no device: DELETE /me/devices/{its id} is a 404 and it keeps working", async () => {
    const cookie = await session("carol");
    const { id } = (await env.DB.prepare("SELECT id FROM access_tokens WHERE token_hash = ?")
      .bind(await sha256Hex(cookie))
      .first<{ id: number }>())!;
    await expectError(await as("carol").send("DELETE", `/me/devices/${id}`), 404, "Not Found");
    expect((await load(cookie)).is_authenticated).toBe(true);
  });

  it("DELETE leaves a full person token in the cookie valid (only the cookie is cleared)", async () => {
    const response = await call("/apps/vcc/session", {
      method: "DELETE",
      headers: { Cookie: `session=${DEMO.tokens.carol}` },
    });
    expect(response.status).toBe(204);
    expect((await load(DEMO.tokens.carol)).is_authenticated).toBe(true);
  });
});

describe("a container-scoped token authenticates nothing outside /apps/vcc", async () => {
  const doc = await (await call("/openapi.json")).json<Document>();
  const secured = Object.entries(doc.paths)
    .filter(([path]) => !path.startsWith("/apps/vcc/"))
    .flatMap(([path, operations]) =>
      Object.entries(operations)
        .filter(([, operation]) => operation.security?.length)
        .map(([method]) => ({ method: method.toUpperCase(), path: path.replace(/\{[^}]+\}/g, "1") })),
    );

  it("walks every secured route", () => {
    expect(secured.length).toBeGreaterThan(40);
    expect(secured).toContainEqual({ method: "GET", path: "/contacts" });
  });

  it.each(secured)("$method $path → 401", async ({ method, path }) => {
    const token = await session("alice");
    const message = await expectError(
      await call(path, { method, token, body: method === "GET" ? undefined : {} }),
      401,
      "Unauthorized",
    );
    expect(message).toContain("consent container");
  });

  it("the same token as a bearer works on /apps/vcc", async () => {
    const token = await session("carol");
    const response = await putVendorTrust("trusted", { token, vendor: "admetrics" });
    expect(response.status).toBe(200);
    expect(await trustOf(token, "admetrics")).toBe("trusted");
    await putVendorTrust(null, { token, vendor: "admetrics" });
  });
});

describe("PUT /apps/vcc/trust/{container_id}/{vendor_slug}", () => {
  it("by the session cookie from the publisher's page, with the CORS grant", async () => {
    const token = await session("bob");
    for (const origin of [PUBLISHER, "https://www.dailynews.example"]) {
      const response = await putVendorTrust("negative", { cookie: token, origin });
      expect(response.status).toBe(200);
      expect(await response.json()).toEqual({ slug: "pixelpartners", trust: "negative" });
      expect(response.headers.get("Access-Control-Allow-Origin")).toBe(origin);
      expect(response.headers.get("Access-Control-Allow-Credentials")).toBe("true");
      expect(response.headers.get("Vary")).toContain("Origin");
    }
    expect(await trustOf(token, "pixelpartners")).toBe("negative");
    // The same setting is the person's trust in that company.
    expect(await (await as("bob").get("/contacts/companies")).json()).toContainEqual(
      expect.objectContaining({
        company: expect.objectContaining({ id: DEMO.vendors.pixelPartners }),
        trust: "negative",
      }),
    );
    expect((await putVendorTrust(null, { cookie: token, origin: PUBLISHER })).status).toBe(200);
    expect(await trustOf(token, "pixelpartners")).toBeNull();
  });

  it("by a person's bearer token", async () => {
    const response = await putVendorTrust("trusted", { token: DEMO.tokens.carol, vendor: "trackbuddy" });
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ slug: "trackbuddy", trust: "trusted" });
    expect(await trustOf(DEMO.tokens.carol, "trackbuddy")).toBe("trusted");
    await putVendorTrust(null, { token: DEMO.tokens.carol, vendor: "trackbuddy" });
  });

  it("no CORS grant for another origin", async () => {
    const token = await session("bob");
    for (const origin of ["https://evil.example", "https://dailynews.example.evil.example", "null"]) {
      const response = await putVendorTrust("trusted", { cookie: token, origin });
      expect(response.headers.get("Access-Control-Allow-Origin")).toBeNull();
      expect(response.headers.get("Access-Control-Allow-Credentials")).toBeNull();
    }
  });

  it("preflight: granted to the publisher's origins only", async () => {
    const preflight = (origin: string) =>
      call("/apps/vcc/trust/dailynews/pixelpartners", {
        method: "OPTIONS",
        headers: {
          Origin: origin,
          "Access-Control-Request-Method": "PUT",
          "Access-Control-Request-Headers": "content-type",
        },
      });
    for (const origin of [PUBLISHER, "https://news.dailynews.example"]) {
      const response = await preflight(origin);
      expect(response.status).toBe(204);
      expect(response.headers.get("Access-Control-Allow-Origin")).toBe(origin);
      expect(response.headers.get("Access-Control-Allow-Credentials")).toBe("true");
      expect(response.headers.get("Access-Control-Allow-Methods")).toContain("PUT");
      expect(response.headers.get("Access-Control-Allow-Headers")?.toLowerCase()).toContain("content-type");
      expect(response.headers.get("Vary")).toContain("Origin");
    }
    for (const origin of ["https://evil.example", "https://notdailynews.example"]) {
      const response = await preflight(origin);
      expect(response.status).toBe(204);
      expect(response.headers.get("Access-Control-Allow-Origin")).toBeNull();
      expect(response.headers.get("Access-Control-Allow-Methods")).toBeNull();
    }
  });

  it("an unknown or disabled container: its preflight is a 404 and its load a 404 that still says `Vary: Origin`", async () => {
    for (const container of ["nosuch", "oldblog"]) {
      const preflight = await call(`/apps/vcc/trust/${container}/admetrics`, {
        method: "OPTIONS",
        headers: { Origin: `https://${container}.example`, "Access-Control-Request-Method": "PUT" },
      });
      expect(preflight.status).toBe(404);
      expect(preflight.headers.get("Access-Control-Allow-Origin")).toBeNull();
      const loaded = await call(`/apps/vcc/load_container/${container}`, {
        headers: { Origin: `https://${container}.example` },
      });
      await expectError(loaded.clone(), 404, "Not Found");
      expect(loaded.headers.get("Vary")).toContain("Origin");
      expect(loaded.headers.get("Cache-Control")).toBe("private, no-store");
    }
  });

  it("401 without identity, 403 for a service, 404 for an unknown container or a vendor not in it, 400 for a bad value", async () => {
    await expectError(await putVendorTrust("trusted", { origin: PUBLISHER }), 401, "Unauthorized");
    await expectError(await putVendorTrust("trusted", { cookie: "vcc_not_a_real_session_token" }), 401, "Unauthorized");
    await expectError(
      await putVendorTrust("trusted", { token: "pk_unknown_token_value", cookie: await session() }),
      401,
      "Unauthorized",
    );
    await expectError(await putVendorTrust("trusted", { token: DEMO.tokens.telephony }), 403, "Forbidden");
    const token = await session();
    await expectError(
      await putVendorTrust("trusted", { cookie: token, container: "oldblog", vendor: "admetrics" }),
      404,
      "Not Found",
    );
    await expectError(await putVendorTrust("trusted", { cookie: token, container: "nosuch" }), 404, "Not Found");
    await expectError(await putVendorTrust("trusted", { cookie: token, vendor: "acme" }), 404, "Not Found");
    await expectError(await putVendorTrust("maybe", { cookie: token }), 400, "Bad Request");
  });
});

describe("GET /apps/vcc/frame/{container_id}", () => {
  it("is a small page that only the publisher's domain and subdomains may frame", async () => {
    const response = await call("/apps/vcc/frame/dailynews");
    expect(response.status).toBe(200);
    expect(response.headers.get("Content-Type")).toMatch(/^text\/html/);
    const csp = response.headers.get("Content-Security-Policy") ?? "";
    expect(csp).toContain("frame-ancestors https://dailynews.example:* https://*.dailynews.example:*");
    expect(csp).toContain("default-src 'none'");
    const html = await response.text();
    expect(new TextEncoder().encode(html).byteLength).toBeLessThan(10 * 1024);
    expect(html).toContain("requestStorageAccess");
    expect(html).toContain('"vcc:container"');
    expect(html).toContain("postMessage");
    // The page's script and style run under the CSP nonce.
    const nonce = /'nonce-([^']+)'/.exec(csp)![1]!;
    expect(html).toContain(`<script nonce="${nonce}">`);
  });

  it("404 with a short HTML message for an unknown or disabled container", async () => {
    for (const id of ["oldblog", "nosuch", "acme"]) {
      const response = await call(`/apps/vcc/frame/${id}`);
      expect(response.status).toBe(404);
      expect(response.headers.get("Content-Type")).toMatch(/^text\/html/);
      expect(await response.text()).toContain("Not found");
    }
  });
});

describe("publisher origins (https only outside development)", () => {
  it("grant only https outside development, http too in development", () => {
    expect(originAllowed("https://dailynews.example", "dailynews.example")).toBe(true);
    expect(originAllowed("https://a.b.dailynews.example:8443", "dailynews.example")).toBe(true);
    expect(originAllowed("http://dailynews.example", "dailynews.example")).toBe(false);
    expect(originAllowed("http://dailynews.example", "dailynews.example", true)).toBe(true);
    expect(originAllowed("https://dailynews.example/path", "dailynews.example")).toBe(false);
    expect(originAllowed("https://xdailynews.example", "dailynews.example")).toBe(false);
    expect(publisherFrameAncestors("dailynews.example")).toBe(
      "https://dailynews.example:* https://*.dailynews.example:*",
    );
  });

  it("the running service (development) grants http only there", async () => {
    const response = await call("/apps/vcc/load_container/dailynews", {
      headers: { Origin: "http://dailynews.example" },
    });
    expect(response.headers.get("Access-Control-Allow-Origin")).toBe("http://dailynews.example");
  });
});
