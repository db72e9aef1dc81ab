import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { loadContainer } from "../../src/routes/vcc/vcc.routes";
import { answer, call, DEMO, expectError, insertToken } from "../helpers";

const load = (id: string, headers: Record<string, string> = {}) =>
  call(`/apps/vcc/load_container/${id}`, { headers: { Accept: "application/json", ...headers } });

describe("GET /apps/vcc/load_container/{container_id}", () => {
  it("returns the publisher and its vendors in order with the signed-in visitor's trust", async () => {
    const response = await load("dailynews", { Cookie: `session=${DEMO.tokens.alice}` });
    expect(response.headers.get("Cache-Control")).toBe("private, no-store");
    expect(await answer(response, 200, loadContainer)).toEqual({
      is_authenticated: true,
      company: {
        slug: "dailynews",
        name: "Daily News",
        domain: "dailynews.example",
        logo: "https://dailynews.example/logo.png",
      },
      vendors: [
        {
          slug: "admetrics",
          name: "AdMetrics",
          logo: "https://admetrics.example/logo.png",
          category: "analytics",
          profile_url: "https://trust.example/vendors/admetrics",
          trust: "trusted",
        },
        {
          slug: "trackbuddy",
          name: "TrackBuddy",
          logo: "https://trackbuddy.example/logo.png",
          category: "advertising",
          profile_url: "https://trust.example/vendors/trackbuddy",
          trust: "negative",
        },
        {
          slug: "pixelpartners",
          name: "Pixel Partners",
          logo: "https://pixelpartners.example/logo.png",
          category: "social",
          profile_url: "https://trust.example/vendors/pixelpartners",
          trust: null,
        },
      ],
    });
  });

  it("shows another visitor only their own settings", async () => {
    const body = await answer(await load("dailynews", { Cookie: `session=${DEMO.tokens.bob}` }), 200, loadContainer);
    expect(body.is_authenticated).toBe(true);
    expect(body.vendors.map((v) => v.trust)).toEqual([null, null, null]);
  });

  it.each([
    ["no cookie", {}],
    ["an unknown token", { Cookie: "session=pk_not_a_real_session" }],
    ["a malformed cookie", { Cookie: "session=%%%" }],
    ["a service token", { Cookie: `session=${DEMO.tokens.telephony}` }],
  ])("treats %s as signed out, not as an error", async (_, headers) => {
    const response = await load("dailynews", headers as Record<string, string>);
    const body = await answer(response, 200, loadContainer);
    expect(body.is_authenticated).toBe(false);
    expect(body.vendors.map((v) => v.trust)).toEqual([null, null, null]);
  });

  it("treats an expired session as signed out", async () => {
    await insertToken("pk_test_vcc_expired", { personId: DEMO.people.alice, expiresAt: new Date(Date.now() - 1) });
    const body = await answer(await load("dailynews", { Cookie: "session=pk_test_vcc_expired" }), 200, loadContainer);
    expect(body.is_authenticated).toBe(false);
  });

  it("a vendor the operator disabled is not shown, and takes no trust through the container (404)", async () => {
    const disable = (status: string) =>
      env.DB.prepare("UPDATE companies SET status = ? WHERE slug = 'pixelpartners'").bind(status).run();
    await disable("disabled");
    try {
      const body = await answer(await load("dailynews", { Cookie: `session=${DEMO.tokens.bob}` }), 200, loadContainer);
      expect(body.vendors.map((v) => v.slug)).toEqual(["admetrics", "trackbuddy"]);
      const put = await call("/apps/vcc/trust/dailynews/pixelpartners", {
        method: "PUT",
        headers: { Cookie: `session=${DEMO.tokens.bob}` },
        body: { trust: "trusted" },
      });
      await expectError(put, 404, "Not Found");
    } finally {
      await disable("enabled");
    }
  });

  it("answers 404 for an unknown or disabled container", async () => {
    await expectError(await load("oldblog"), 404, "Not Found");
    await expectError(await load("no-such-publisher"), 404, "Not Found");
    // A company slug that is not a publisher is not a container either.
    await expectError(await load("acme"), 404, "Not Found");
  });

  it("grants credentialed CORS to the publisher's domain and subdomains only", async () => {
    for (const origin of ["https://dailynews.example", "https://www.dailynews.example"]) {
      const response = await load("dailynews", { Origin: origin });
      expect(response.headers.get("Access-Control-Allow-Origin")).toBe(origin);
      expect(response.headers.get("Access-Control-Allow-Credentials")).toBe("true");
      expect(response.headers.get("Vary")).toContain("Origin");
    }
    for (const origin of [
      "https://evil.example",
      "https://dailynews.example.evil.example",
      "https://notdailynews.example",
      "null",
    ]) {
      const response = await load("dailynews", { Origin: origin });
      expect(response.status).toBe(200);
      expect(response.headers.get("Access-Control-Allow-Origin")).toBeNull();
      expect(response.headers.get("Access-Control-Allow-Credentials")).toBeNull();
    }
  });
});
