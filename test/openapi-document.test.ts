import { describe, expect, it } from "vitest";
import { createApp } from "../src/app";
import { documentFor } from "../src/lib/openapi";
import { call } from "./helpers";

/**
 * What a client generator needs from the document, beyond `redocly lint`
 * (run by `npm test` before this suite): an operationId on every operation,
 * unique; tags defined at the top; security declared everywhere; and every
 * status the framework can answer on a route documented on it.
 */
type Operation = {
  operationId?: string;
  tags?: string[];
  security?: unknown[];
  parameters?: { in: string }[];
  requestBody?: unknown;
  responses: Record<string, unknown>;
};
type Document = {
  servers?: unknown[];
  tags?: { name: string }[];
  paths: Record<string, Record<string, Operation>>;
};

const doc = await (await call("/openapi.json")).json<Document>();
const operations = Object.entries(doc.paths).flatMap(([path, ops]) =>
  Object.entries(ops).map(([method, operation]) => ({ name: `${method.toUpperCase()} ${path}`, operation })),
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
