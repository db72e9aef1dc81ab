import { describe, expect, it } from "vitest";

/**
 * The layering of docs/architecture.md ("Layout"), checked on the source text:
 * route handlers reach bindings only through `c.var.deps`; services and the
 * database layer never depend on routes; the domain depends on nothing but
 * itself and src/lib; the demo world is a fixture nothing in the Worker imports.
 */
const sources: Record<string, string> = import.meta.glob(["../src/**/*.ts", "!../src/worker-configuration.d.ts"], {
  query: "?raw",
  import: "default",
  eager: true,
});

/** Paths from the repository root (`src/routes/…`), each with its text. */
const files = Object.entries(sources).map(([key, text]) => ({ path: key.replace(/^\.\.\//, ""), text }));
const under = (folder: string) => files.filter((file) => file.path.startsWith(folder));

/** The repository paths a file imports from (relative specifiers only), without extension. */
function importsOf(file: { path: string; text: string }): string[] {
  const specifiers = [
    ...file.text.matchAll(/^\s*(?:import|export)\b[^;]*?\bfrom\s*["']([^"']+)["']/gm),
    ...file.text.matchAll(/\bimport\(\s*["']([^"']+)["']\s*\)/g),
  ].map((match) => match[1]!);
  return specifiers.filter((spec) => spec.startsWith(".")).map((spec) => resolve(file.path, spec));
}

function resolve(from: string, specifier: string): string {
  const parts = from.split("/").slice(0, -1);
  for (const part of specifier.split("/")) {
    if (part === "..") parts.pop();
    else if (part !== ".") parts.push(part);
  }
  return parts.join("/").replace(/\.ts$/, "");
}

/** `file imports …` lines for the imports of `files` that land in one of `folders`. */
const importsInto = (sourceFiles: typeof files, folders: string[]) =>
  sourceFiles.flatMap((file) =>
    importsOf(file)
      .filter((target) => folders.some((folder) => `${target}/`.startsWith(folder)))
      .map((target) => `${file.path} imports ${target}`),
  );

describe("architecture", () => {
  it("reads every source file (the checks below see the whole tree)", () => {
    expect(under("src/routes/").length).toBeGreaterThan(20);
    expect(under("src/services/").length).toBeGreaterThan(20);
    expect(under("src/db/").length).toBeGreaterThan(5);
    expect(files.some((file) => file.path === "src/services/outbox.ts")).toBe(true);
  });

  it("no file under src/routes/ reads c.env: handlers reach bindings through c.var.deps", () => {
    const offenders = under("src/routes/").filter(
      (file) => /\bc\s*\.\s*env\b/.test(file.text) || /\{[^}]*\benv\b[^}]*\}\s*=\s*c\b/.test(file.text),
    );
    expect(offenders.map((file) => file.path)).toEqual([]);
  });

  it("src/services/ and src/db/ never import from src/routes/", () => {
    expect(importsInto([...under("src/services/"), ...under("src/db/")], ["src/routes/"])).toEqual([]);
  });

  it("src/domain/ imports only the domain and src/lib/", () => {
    const outside = under("src/domain/").flatMap((file) =>
      importsOf(file)
        .filter((target) => !target.startsWith("src/domain/") && !target.startsWith("src/lib/"))
        .map((target) => `${file.path} imports ${target}`),
    );
    expect(outside).toEqual([]);
  });

  it("nothing in the Worker imports the fixtures (the demo world)", () => {
    const worker = files.filter((file) => !file.path.startsWith("src/fixtures/"));
    expect(importsInto(worker, ["src/fixtures/"])).toEqual([]);
  });

  it("the checks catch what they look for", () => {
    const handler = { path: "src/routes/x/x.handlers.ts", text: 'import { a } from "../../routes/y";\nc.env.DB;' };
    expect(/\bc\s*\.\s*env\b/.test(handler.text)).toBe(true);
    expect(importsOf({ path: "src/services/x.ts", text: 'import { a } from "../routes/y/y.schemas";' })).toEqual([
      "src/routes/y/y.schemas",
    ]);
    expect(importsInto([{ path: "src/db/x.ts", text: 'export { a } from "../routes/y";' }], ["src/routes/"])).toEqual([
      "src/db/x.ts imports src/routes/y",
    ]);
  });
});
