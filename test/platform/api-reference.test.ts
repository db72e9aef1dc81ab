import { exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";

/**
 * /docs works offline: the page and everything it loads come from the Worker,
 * and the OpenAPI document names the origin it was fetched from as its server.
 */
const ORIGIN = "http://docs.test";

const get = (path: string) =>
  exports.default.fetch(new Request(`${ORIGIN}${path}`, { headers: { "CF-Connecting-IP": "198.51.100.77" } }));

/** The `src`/`href` of every <script> and <link rel="stylesheet"> in a page. */
function loadedResources(html: string): { kind: string; url: string }[] {
  const found: { kind: string; url: string }[] = [];
  for (const tag of html.match(/<script\b[^>]*>/gi) ?? []) {
    const src = /\bsrc\s*=\s*["']?([^"'\s>]+)/i.exec(tag)?.[1];
    if (src) found.push({ kind: "script", url: src });
  }
  for (const tag of html.match(/<link\b[^>]*>/gi) ?? []) {
    // Stylesheets and anything preloaded; not the icon (`data:`, no request).
    if (!/\brel\s*=\s*["']?[^"'>]*\b(stylesheet|preload|modulepreload)\b/i.test(tag)) continue;
    const href = /\bhref\s*=\s*["']?([^"'\s>]+)/i.exec(tag)?.[1];
    if (href) found.push({ kind: "link", url: href });
  }
  return found;
}

describe("the API reference at /docs", () => {
  it("loads no script or style from another origin, and allows none", async () => {
    const response = await get("/docs");
    expect(response.status).toBe(200);
    expect(response.headers.get("Content-Type")).toMatch(/^text\/html/);
    const html = await response.text();
    const resources = loadedResources(html);
    expect(resources.filter((r) => r.kind === "script").length).toBeGreaterThan(0);
    expect(resources.filter((r) => r.kind === "link").length).toBeGreaterThan(0);
    for (const { url } of resources) expect(new URL(url, `${ORIGIN}/docs`).origin, url).toBe(ORIGIN);
    // No CSS @import or url() in inline styles pointing elsewhere either.
    expect(html).not.toMatch(/@import|url\(\s*["']?(https?:)?\/\//i);
    const csp = response.headers.get("Content-Security-Policy") ?? "";
    expect(csp).toContain("script-src 'self'");
    expect(csp).toMatch(/style-src 'self'/);
    expect(csp).toContain("default-src 'none'");
    expect(csp).not.toMatch(/https?:|\*/);
  });

  it("serves every script and stylesheet the page references, with its content type", async () => {
    const html = await (await get("/docs")).text();
    const resources = loadedResources(html);
    for (const { kind, url } of resources) {
      const path = new URL(url, `${ORIGIN}/docs`).pathname;
      const response = await get(path);
      expect(response.status, path).toBe(200);
      const type = response.headers.get("Content-Type") ?? "";
      if (kind === "script") expect(type, path).toMatch(/^(text|application)\/javascript/);
      else expect(type, path).toMatch(/^text\/css/);
      const body = await response.text();
      expect(body.length, path).toBeGreaterThan(kind === "script" ? 100 : 1000);
    }
    const bundle = await (await get("/docs/swagger-ui-bundle.js")).text();
    expect(bundle).toContain("SwaggerUIBundle");
    expect(await (await get("/docs/init.js")).text()).toContain("SwaggerUIBundle(");
    expect(html).toContain('data-openapi="/openapi.json"');
  });

  it("answers 404 for an asset it does not have", async () => {
    for (const path of ["/docs/nothing.js", "/docs/constructor", "/docs/__proto__"]) {
      const response = await get(path);
      expect(response.status, path).toBe(404);
      expect(await response.json()).toMatchObject({ error: { code: "404" } });
    }
  });
});

type Header = { schema?: unknown; description?: string; $ref?: string };
type ResponseObject = { headers?: Record<string, Header> };
type Document = {
  servers?: { url: string }[];
  paths: Record<string, Record<string, { responses?: Record<string, ResponseObject> }>>;
  components?: { headers?: Record<string, Header> };
};

describe("the OpenAPI document", () => {
  it("names the origin it was fetched from as its server", async () => {
    const doc = await (await get("/openapi.json")).json<Document>();
    expect(doc.servers?.map((server) => server.url)).toEqual([ORIGIN]);
    const other = await (
      await exports.default.fetch(new Request("https://api.example.com:8443/openapi.json"))
    ).json<Document>();
    expect(other.servers?.map((server) => server.url)).toEqual(["https://api.example.com:8443"]);
  });

  it("declares Retry-After on every 429", async () => {
    const doc = await (await get("/openapi.json")).json<Document>();
    const tooMany = Object.entries(doc.paths).flatMap(([path, operations]) =>
      Object.entries(operations)
        .filter(([, operation]) => operation.responses?.["429"])
        .map(([method, operation]) => ({
          name: `${method.toUpperCase()} ${path}`,
          response: operation.responses!["429"]!,
        })),
    );
    expect(tooMany.length).toBeGreaterThan(50);
    // Declared once, under components.headers, and referred to from each 429.
    const header = (entry: Header | undefined) =>
      entry?.$ref ? doc.components?.headers?.[entry.$ref.replace("#/components/headers/", "")] : entry;
    const missing = tooMany
      .filter(({ response }) => !header(response.headers?.["Retry-After"])?.schema)
      .map(({ name }) => name);
    expect(missing).toEqual([]);
  });
});
