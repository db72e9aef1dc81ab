import { Hono } from "hono";
import { etag } from "hono/etag";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { sha256Hex } from "../../src/lib/crypto";
import { conditionalRead } from "../../src/middleware/conditional";
import { trustLookupGet } from "../../src/routes/buzz/buzz.routes";
import { syncContacts } from "../../src/routes/contacts/contacts.routes";
import type { AppEnv } from "../../src/types";
import { answer, as, call, DEMO, employeeBody, expectError, fresh, insertToken, secureNumberOf } from "../helpers";

/** Wire details a mobile client relies on (docs/decisions.md, "Conditional reads", "Date", "Rate limits", "Ids"). */

type Document = {
  paths: Record<
    string,
    Record<string, { responses: Record<string, { content?: Record<string, { example?: unknown }> }> }>
  >;
  components: { schemas: Record<string, { properties?: Record<string, { type?: string; format?: string }> }> };
};

describe("conditional reads: ETag and If-None-Match", () => {
  const reads: [string, "alice" | "carol"][] = [
    ["/contacts", "carol"],
    ["/companies/1/employees", "alice"],
    [`/companies/1/employees/2`, "alice"],
    ["/companies/1", "alice"],
    ["/companies/1/licenses", "alice"],
    ["/companies/1/licenses/protect", "alice"],
    ["/licenses", "alice"],
    ["/companies/1/webhooks", "alice"],
  ];
  for (const [path, who] of reads) {
    it(`GET ${path} has an ETag; If-None-Match with it is 304 without a body`, async () => {
      const first = await as(who).get(path);
      expect(first.status).toBe(200);
      const tag = first.headers.get("ETag");
      expect(tag).toMatch(/^"[0-9a-f]+"$/);
      const again = await as(who).get(path, { headers: { "If-None-Match": tag! } });
      expect(again.status).toBe(304);
      expect(await again.text()).toBe("");
      expect(again.headers.get("ETag")).toBe(tag);
      expect(again.headers.get("Date")).not.toBeNull();
      const stale = await as(who).get(path, { headers: { "If-None-Match": '"not-the-tag"' } });
      expect(stale.status).toBe(200);
    });
  }

  it("the ETag is the one hono's etag middleware gives the same body, past 256 KiB too", async () => {
    const bodies = ["", "x", JSON.stringify({ é: "ünïcode" }), "a".repeat(262_144), "b".repeat(600_001)];
    const ours = new Hono<AppEnv>().get("/:i", conditionalRead, (c) => c.text(bodies[Number(c.req.param("i"))]!));
    const hono = new Hono().get("/:i", etag(), (c) => c.text(bodies[Number(c.req.param("i"))]!));
    for (const i of bodies.keys()) {
      const [mine, theirs] = await Promise.all([ours.request(`/${i}`), hono.request(`/${i}`)]);
      expect(mine.headers.get("ETag")).toBe(theirs.headers.get("ETag"));
      expect(await mine.text()).toBe(bodies[i]);
      const tag = theirs.headers.get("ETag");
      if (tag === null) continue;
      for (const ifNoneMatch of [tag, `W/${tag}`, `"other", ${tag}`, "*", '"other"']) {
        const headers = { "If-None-Match": ifNoneMatch };
        const [again, theirsAgain] = await Promise.all([
          ours.request(`/${i}`, { headers }),
          hono.request(`/${i}`, { headers }),
        ]);
        expect(again.status).toBe(theirsAgain.status);
        expect([...again.headers]).toEqual([...theirsAgain.headers]);
        expect(await again.text()).toBe(await theirsAgain.text());
      }
    }
  });

  it("a contact's ETag changes when the contact changes", async () => {
    const saved = await as("carol").send("POST", "/contacts/sync", [{ display_name: "Etta" }]);
    const [contact] = await answer(saved, 200, syncContacts);
    const first = await as("carol").get(`/contacts/${contact!.id}`);
    const tag = first.headers.get("ETag")!;
    expect((await as("carol").get(`/contacts/${contact!.id}`, { headers: { "If-None-Match": tag } })).status).toBe(304);
    await as("carol").send("POST", "/contacts/sync", [{ id: contact!.id, display_name: "Etta Renamed" }]);
    const changed = await as("carol").get(`/contacts/${contact!.id}`, { headers: { "If-None-Match": tag } });
    expect(changed.status).toBe(200);
    expect(changed.headers.get("ETag")).not.toBe(tag);
  });
});

describe("conditional reads of a page", () => {
  it("a page whose items stay while the list grows elsewhere is a 200 with the new total and links, not a 304", async () => {
    const path = "/companies/1/employees?per_page=1";
    const first = await as("alice").get(path);
    const tag = first.headers.get("ETag")!;
    const total = Number(first.headers.get("X-Total-Count"));
    expect((await as("alice").get(path, { headers: { "If-None-Match": tag } })).status).toBe(304);
    // A new employee has a later id: page 1 shows the same person as before.
    const created = await as("alice").send(
      "POST",
      "/companies/1/employees",
      employeeBody(fresh("paged"), { license: null }),
    );
    expect(created.status).toBe(200);
    const again = await as("alice").get(path, { headers: { "If-None-Match": tag } });
    expect(again.status).toBe(200);
    expect(await again.text()).toBe(await first.text());
    expect(again.headers.get("X-Total-Count")).toBe(String(total + 1));
    expect(again.headers.get("Link")).not.toBe(first.headers.get("Link"));
    expect(again.headers.get("ETag")).not.toBe(tag);
  });
});

describe("Date on every answer", () => {
  it("on a success, an error and an unknown route", async () => {
    for (const response of [await as("alice").get("/companies/1"), await call("/companies/1"), await call("/nope")]) {
      const date = response.headers.get("Date");
      expect(date).toMatch(/^[A-Z][a-z]{2}, \d{2} [A-Z][a-z]{2} \d{4} \d{2}:\d{2}:\d{2} GMT$/);
      expect(Math.abs(Date.parse(date!) - Date.now())).toBeLessThan(60_000);
    }
  });
});

describe("RateLimit and RateLimit-Policy on successes", () => {
  it("a person token's answer states its policy and what is left", async () => {
    const response = await as("alice").get("/companies/1");
    expect(response.status).toBe(200);
    expect(response.headers.get("RateLimit-Policy")).toBe('"person";q=1000;w=60');
    const [, remaining, reset] = /^"person";r=(\d+);t=(\d+)$/.exec(response.headers.get("RateLimit") ?? "") ?? [];
    expect(Number(remaining)).toBeLessThan(1000);
    expect(Number(reset)).toBeGreaterThan(0);
    expect(Number(reset)).toBeLessThanOrEqual(60);
  });

  it("a service token's answer states the service budget; an error carries neither", async () => {
    const lookup = new URLSearchParams({ number: (await secureNumberOf("alice")).e164, inbound: DEMO.acmePhone });
    const ok = await as("telephony").get(`/apps/buzz/trust-lookup?${lookup}`);
    expect(ok.headers.get("RateLimit-Policy")).toBe('"service";q=600000;w=60');
    await answer(ok, 200, trustLookupGet);
    const refused = await as("bob").get("/companies/1");
    expect(refused.status).toBe(403);
    expect(refused.headers.get("RateLimit")).toBeNull();
  });
});

describe("an error made after the handler answered", () => {
  it("a token revoked in D1 while this isolate held it: the 401 replacing a success carries none of its headers", async () => {
    const token = `sk_test_late_${crypto.randomUUID().replaceAll("-", "")}`;
    await insertToken(token, { serviceName: "ops", scopes: ["platform:admin"] });
    expect((await call("/internal/status", { token })).status).toBe(200); // this isolate now holds it as valid
    await env.DB.prepare("UPDATE access_tokens SET revoked_at = ? WHERE token_hash = ?")
      .bind(Date.now(), await sha256Hex(token))
      .run();
    // A write that changes nothing (no sealed secret to reseal): its token check runs after the handler's 200.
    const refused = await call("/internal/provider-keys/rotate", { method: "POST", token });
    const headers = Object.fromEntries(refused.headers);
    expect(await expectError(refused, 401, "Unauthorized")).toMatch(/revoked/);
    expect(headers).not.toHaveProperty("ratelimit");
    expect(headers).not.toHaveProperty("ratelimit-policy");
    expect(headers).toHaveProperty("x-request-id");
  });
});

describe("401 messages say what is wrong with the token", () => {
  it("a malformed token, an unknown token and a malformed header each say which", async () => {
    const malformed = await call("/companies/1", { token: "pk_nope" });
    expect(await expectError(malformed, 401, "Unauthorized")).toMatch(/the token is malformed/);
    const unknown = await call("/companies/1", { token: "pk_nope_but_long_enough" });
    expect(await expectError(unknown, 401, "Unauthorized")).toMatch(/bearer token is unknown/);
    const header = await call("/companies/1", { headers: { Authorization: "Token abc" } });
    expect(await expectError(header, 401, "Unauthorized")).toMatch(/Authorization header must be `Bearer <token>`/);
  });
});

describe("the OpenAPI document", () => {
  it("declares ids as int64", async () => {
    const doc = await (await call("/openapi.json")).json<Document>();
    expect(doc.components.schemas.Contact?.properties?.id).toMatchObject({ type: "integer", format: "int64" });
    const ids = Object.values(doc.components.schemas).flatMap((schema) =>
      Object.entries(schema.properties ?? {}).filter(([name, p]) => /(^|_)id$/.test(name) && p.type === "integer"),
    );
    expect(ids.length).toBeGreaterThan(5);
    for (const [, property] of ids) expect(property.format).toBe("int64");
  });

  it("gives each error status its own example", async () => {
    const doc = await (await call("/openapi.json")).json<Document>();
    const responses = doc.paths["/companies/{company_id}/webhooks"]!.post!.responses;
    const example = (status: string) =>
      (responses[status]!.content!["application/json"]!.example as { error: { code: string; message: string } }).error;
    for (const status of ["400", "401", "403", "404", "409", "413", "422", "429"]) {
      expect(example(status).code).toBe(status);
    }
    expect(example("401").message).toMatch(/^Unauthorized: /);
    expect(example("403").message).toMatch(/^Forbidden: /);
    expect(new Set(["400", "401", "403", "404"].map((s) => example(s).message)).size).toBe(4);
  });
});
