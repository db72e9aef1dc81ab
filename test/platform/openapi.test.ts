import { describe, expect, it } from "vitest";
import { createApp } from "../../src/app";
import { call, expectError } from "../helpers";

type Operation = { security?: unknown[]; parameters?: { name: string; in: string }[] };
type Document = { openapi: string; paths: Record<string, Record<string, Operation>> };

async function openapi(): Promise<Document> {
  const response = await call("/openapi.json");
  expect(response.status).toBe(200);
  return (await response.json()) as Document;
}

/** Every (method, path) the app answers, in OpenAPI path syntax; middleware and the doc routes excluded. */
function servedRoutes(): string[] {
  const undocumented = new Set(["/openapi.json", "/docs", "/docs/:asset"]);
  return [
    ...new Set(
      createApp()
        .routes.filter((route) => route.method !== "ALL" && !undocumented.has(route.path))
        .map((route) => `${route.method.toLowerCase()} ${route.path.replace(/:([A-Za-z0-9_]+)/g, "{$1}")}`),
    ),
  ].sort();
}

function documentedRoutes(doc: Document): string[] {
  return Object.entries(doc.paths)
    .flatMap(([path, operations]) => Object.keys(operations).map((method) => `${method} ${path}`))
    .sort();
}

describe("OpenAPI document", () => {
  it("is OpenAPI 3.1 and lists exactly the routes the app serves", async () => {
    const doc = await openapi();
    expect(doc.openapi).toBe("3.1.0");
    expect(documentedRoutes(doc)).toEqual(servedRoutes());
    expect(servedRoutes()).toContain("get /companies/{company_id}");
  });

  it("serves the interactive reference at /docs", async () => {
    const response = await call("/docs");
    expect(response.status).toBe(200);
    expect(response.headers.get("Content-Type")).toMatch(/text\/html/);
    expect(await response.text()).toContain("/openapi.json");
  });
});

/**
 * One security suite over every documented route (unkey's idea, our
 * document): a route that declares bearer security must refuse a missing
 * and an unknown token with 401 in the error body.
 */
describe("every secured route refuses requests without a valid token", async () => {
  const doc = await (await call("/openapi.json")).json<Document>();
  const secured = Object.entries(doc.paths).flatMap(([path, operations]) =>
    Object.entries(operations)
      .filter(([, operation]) => operation.security?.length)
      .map(([method]) => ({ method: method.toUpperCase(), path: path.replace(/\{[^}]+\}/g, "1") })),
  );

  it("has secured routes to check", () => {
    expect(secured.length).toBeGreaterThan(5);
  });

  it.each(secured)("$method $path", async ({ method, path }) => {
    await expectError(await call(path, { method }), 401, "Unauthorized");
    await expectError(await call(path, { method, token: "pk_unknown_token_value" }), 401, "Unauthorized");
  });
});
