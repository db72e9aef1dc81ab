import { describe, expect, it } from "vitest";
import { createApp } from "../../src/app";
import { documentFor } from "../../src/lib/openapi";
import { createActivity } from "../../src/routes/buzz/buzz.routes";
import { answer, call } from "../helpers";

/**
 * What a client generator needs from the document, beyond `redocly lint`
 * (run by `npm test` before this suite): an operationId on every operation,
 * unique; tags defined at the top; security declared everywhere; and every
 * status the framework can answer on a route documented on it.
 */
type Operation = {
  operationId?: string;
  tags?: string[];
  security?: Record<string, unknown>[];
  parameters?: { in: string }[];
  requestBody?: unknown;
  responses: Record<string, { headers?: Record<string, { $ref?: string; required?: boolean }> }>;
};
type Document = {
  servers?: unknown[];
  tags?: { name: string }[];
  paths: Record<string, Record<string, Operation>>;
  components: { schemas: Record<string, unknown>; headers?: Record<string, { required?: boolean }> };
};

const doc = await (await call("/openapi.json")).json<Document>();
const operations = Object.entries(doc.paths).flatMap(([path, ops]) =>
  Object.entries(ops).map(([method, operation]) => ({ name: `${method.toUpperCase()} ${path}`, method, operation })),
);

describe("the OpenAPI document", () => {
  it("is the one createApp() generates with the shared top level", () => {
    expect(doc).toEqual(JSON.parse(JSON.stringify(createApp().getOpenAPI31Document(documentFor("http://api.test")))));
    expect(doc.servers?.length).toBeGreaterThan(0);
  });

  it("names every operation once", () => {
    const ids = operations.map(({ operation }) => operation.operationId);
    expect(ids.filter((id) => !id)).toEqual([]);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it("defines every tag it uses", () => {
    const defined = new Set(doc.tags?.map((tag) => tag.name));
    const undefinedTags = operations.flatMap(({ name, operation }) =>
      (operation.tags ?? ["(none)"]).filter((tag) => !defined.has(tag)).map((tag) => `${name}: ${tag}`),
    );
    expect(undefinedTags).toEqual([]);
  });

  it("declares security on every operation ([] for public ones)", () => {
    expect(operations.filter(({ operation }) => !Array.isArray(operation.security)).map(({ name }) => name)).toEqual(
      [],
    );
  });

  it("documents every status the framework can answer", () => {
    // trust-lookup reads any input leniently and never answers 400 (docs/decisions.md).
    const never400 = new Set(["trustLookupGet", "trustLookupPost"]);
    const missing = operations.flatMap(({ name, operation }) => {
      const needs: string[] = [];
      // A path parameter that is not valid makes the path name nothing: 404.
      if (operation.parameters?.some((p) => p.in === "path")) needs.push("404");
      const hasInput = operation.parameters?.some((p) => p.in === "query") || operation.requestBody;
      if (hasInput && !never400.has(operation.operationId!)) needs.push("400");
      if (operation.requestBody) needs.push("413");
      if (operation.security?.length) needs.push("401", "429");
      return needs.filter((status) => !(status in operation.responses)).map((status) => `${name} ${status}`);
    });
    expect(missing).toEqual([]);
  });
});

describe("the headers every answer carries (src/routes/create-router.ts)", () => {
  /** Whether the answer declares `header`, and as required. */
  const declared = (response: Operation["responses"][string], header: string) => {
    const entry = response.headers?.[header];
    if (!entry) return null;
    return { required: !!(entry.$ref ? doc.components.headers?.[entry.$ref.split("/").pop()!] : entry)?.required };
  };
  const answers = operations.flatMap(({ name, method, operation }) =>
    Object.entries(operation.responses).map(([status, response]) => ({
      name: `${name} ${status}`,
      method,
      status: Number(status),
      tokensOnly: !!operation.security?.length && operation.security.every((scheme) => Object.keys(scheme).length),
      response,
    })),
  );

  it("defines them once, under components.headers", () => {
    expect(Object.keys(doc.components.headers ?? {}).sort()).toEqual(
      ["RateLimit", "RateLimit-Policy", "Retry-After", "X-Request-Id", "x-d1-bookmark"].sort(),
    );
  });

  it("declares X-Request-Id, required, on every answer of every operation", () => {
    expect(answers.length).toBeGreaterThan(400);
    expect(answers.filter((a) => !declared(a.response, "X-Request-Id")?.required).map((a) => a.name)).toEqual([]);
  });

  it("declares RateLimit and RateLimit-Policy, required, on every success of a route that takes only tokens", () => {
    const successes = answers.filter((a) => a.status < 400 && a.tokensOnly);
    expect(successes.length).toBeGreaterThan(80);
    const missing = successes.flatMap((a) =>
      ["RateLimit", "RateLimit-Policy"].filter((h) => !declared(a.response, h)?.required).map((h) => `${a.name} ${h}`),
    );
    expect(missing).toEqual([]);
    expect(answers.filter((a) => a.status >= 400 && declared(a.response, "RateLimit")).map((a) => a.name)).toEqual([]);
  });

  it("declares x-d1-bookmark, optional, on every answer of a read and every success of a write", () => {
    const expected = answers.filter((a) => a.method === "get" || a.status < 400);
    expect(
      expected.filter((a) => declared(a.response, "x-d1-bookmark")?.required !== false).map((a) => a.name),
    ).toEqual([]);
  });

  it("puts X-Request-Id on the stream's 101 too (a handler's own Response)", async () => {
    const upgraded = await call("/apps/buzz/stream", { token: "pk_demo_bob", headers: { Upgrade: "websocket" } });
    expect(upgraded.status).toBe(101);
    upgraded.webSocket!.accept();
    upgraded.webSocket!.close(1000);
    expect(upgraded.headers.get("X-Request-Id")).toMatch(/^[0-9a-f-]{36}$/);
  });
});

describe("request bodies declare no JSON Schema `default`", () => {
  it("states what an absent field means in words: a `default` makes the field required in openapi-typescript's client", () => {
    const found: string[] = [];
    const walk = (node: unknown, where: string, seen: Set<string>) => {
      if (Array.isArray(node)) return node.forEach((item) => walk(item, where, seen));
      if (!node || typeof node !== "object") return;
      const ref = (node as { $ref?: string }).$ref;
      if (ref?.startsWith("#/components/schemas/")) {
        const name = ref.split("/").pop()!;
        if (!seen.has(name)) walk(doc.components.schemas[name], `${where} → ${name}`, new Set([...seen, name]));
        return;
      }
      for (const [key, value] of Object.entries(node)) {
        if (key === "default") found.push(where);
        else walk(value, `${where}.${key}`, seen);
      }
    };
    for (const { name, operation } of operations) walk(operation.requestBody, name, new Set());
    expect(found).toEqual([]);
  });

  it("fills an absent call_time with 0 all the same", async () => {
    const response = await call("/apps/buzz/activity", {
      method: "POST",
      token: "pk_demo_alice",
      body: {
        type: "outgoing_call_missed",
        sendable_type: "person",
        sendable_id: 1,
        receivable_type: "person",
        receivable_id: 2,
      },
    });
    expect((await answer(response, 200, createActivity)).data.call_time).toBe(0);
  });
});
