import { describe, expect, it } from "vitest";
import architectureDoc from "../../docs/architecture.md?raw";
import workerTypes from "../../src/worker-configuration.d.ts?raw";

/**
 * The layering of docs/architecture.md ("Layout"), checked on the source text:
 * route handlers reach bindings only through `c.var.deps`; services and the
 * database layer never depend on routes; the domain depends on nothing but
 * itself and src/lib; the demo world is a fixture nothing in the Worker imports.
 */
const sources: Record<string, string> = import.meta.glob(
  ["../../src/**/*.ts", "!../../src/worker-configuration.d.ts"],
  {
    query: "?raw",
    import: "default",
    eager: true,
  },
);

/** Paths from the repository root (`src/routes/…`), each with its text. */
const files = Object.entries(sources).map(([key, text]) => ({ path: key.replace(/^(\.\.\/)+/, ""), text }));
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

/**
 * Whether a line cites the seed interface description, which is not in this
 * repository: `[seed 2.10]`, `[seed 4.3 rule 5]`, `contract §11.3`. Read on
 * the whole line, so an OpenAPI description citing it counts as a comment would.
 */
const citesSeed = (line: string) => /\[seed\b|\bcontract\s*§/i.test(line);

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

  it("no handler or middleware reads a bare c.var.db: D1 is reached through c.var.deps, like every binding", () => {
    const offenders = [...under("src/routes/"), ...under("src/middleware/")].filter(
      (file) =>
        /\bc\s*\.\s*var\s*\.\s*db\b/.test(file.text) ||
        /\bc\s*\.\s*get\(\s*["']db["']\s*\)/.test(file.text) ||
        /\{[^}]*\bdb\b[^}]*\}\s*=\s*c\s*\.\s*var\b/.test(file.text),
    );
    expect(offenders.map((file) => file.path)).toEqual([]);
  });

  it("handlers hand services the one handle: no route passes c.var.deps.db (services take Deps)", () => {
    const offenders = under("src/routes/").filter((file) => /\bc\s*\.\s*var\s*\.\s*deps\s*\.\s*db\b/.test(file.text));
    expect(offenders.map((file) => file.path)).toEqual([]);
  });

  it("services take the one handle whole: no Pick or Partial of Deps, no bare PersonObjects or KVNamespace option", () => {
    const offenders = under("src/services/").filter(
      (file) =>
        /\b(?:Pick|Partial|Omit)<\s*Deps\b/.test(file.text) ||
        (!/\btype (?:PersonObjects|Deps) =/.test(file.text) && /:\s*PersonObjects\b/.test(file.text)) ||
        /^\s*kv\?:\s*KVNamespace/m.test(file.text),
    );
    expect(offenders.map((file) => file.path)).toEqual([]);
  });

  it("src/services/ and src/db/ never import from src/routes/", () => {
    expect(importsInto([...under("src/services/"), ...under("src/db/")], ["src/routes/"])).toEqual([]);
  });

  it("src/services/ never imports from src/queue/: the queue's message shapes are the domain's", () => {
    expect(importsInto(under("src/services/"), ["src/queue/"])).toEqual([]);
  });

  it("every queue consumer and the cron build their dependencies with createDeps, never a bare createDb", () => {
    const consumers = [...under("src/queue/"), ...under("src/cron/")].filter((file) =>
      /\bexport async function handle/.test(file.text),
    );
    expect(consumers.length).toBeGreaterThan(4);
    const offenders = [...under("src/queue/"), ...under("src/cron/")].filter((file) => /\bcreateDb\b/.test(file.text));
    expect(offenders.map((file) => file.path)).toEqual([]);
  });

  it("nobody parses an error's text: a rolled-back batch is explained by its checks (db/guard.ts)", () => {
    const offenders = files.filter((file) => /constraint failed/i.test(file.text));
    expect(offenders.map((file) => file.path)).toEqual([]);
  });

  it("src/domain/ imports only the domain and src/lib/", () => {
    const outside = under("src/domain/").flatMap((file) =>
      importsOf(file)
        .filter((target) => !target.startsWith("src/domain/") && !target.startsWith("src/lib/"))
        .map((target) => `${file.path} imports ${target}`),
    );
    expect(outside).toEqual([]);
  });

  it("src/lib/ imports nothing above it: only src/lib/ (not services, routes, db, objects, domain, nor src/types.ts)", () => {
    const above = under("src/lib/").flatMap((file) =>
      importsOf(file)
        .filter((target) => !target.startsWith("src/lib/"))
        .map((target) => `${file.path} imports ${target}`),
    );
    expect(above).toEqual([]);
  });

  it("src/routes/ imports nothing from src/objects/", () => {
    expect(importsInto(under("src/routes/"), ["src/objects/"])).toEqual([]);
  });

  it("src/objects/ imports nothing from src/services/ or src/routes/: the object is a service of its own", () => {
    expect(importsInto(under("src/objects/"), ["src/services/", "src/routes/"])).toEqual([]);
  });

  it("the Worker reaches the Person object's types through its api module: only person-objects.ts names the class", () => {
    // What a service may import from src/objects/: the RPC types (api), the plain limits; person-objects.ts also the stub;
    // replay-guards.ts the replay guard (its whole RPC surface is one method, typed by the class).
    const allowed = (file: string, target: string) =>
      ["src/objects/person/api", "src/objects/person/limits"].includes(target) ||
      (file === "src/services/person-objects.ts" &&
        ["src/objects/person/stub", "src/objects/person/person"].includes(target)) ||
      (file === "src/services/replay-guards.ts" && target === "src/objects/replay-guard/replay-guard");
    const worker = files.filter((file) => !file.path.startsWith("src/objects/") && file.path !== "src/index.ts");
    const outside = worker.flatMap((file) =>
      importsOf(file)
        .filter((target) => target.startsWith("src/objects/") && !allowed(file.path, target))
        .map((target) => `${file.path} imports ${target}`),
    );
    expect(outside).toEqual([]);
  });

  it("the Person class file is its RPC surface: under 360 lines", () => {
    // A smell detector, not a design rule: the account's RPCs (announce, the signed tickets, and the four of
    // the devices the object holds since 2026-11-27) took it past 320; its methods still only delegate to
    // the rooms beside it.
    const person = files.find((file) => file.path === "src/objects/person/person.ts")!;
    expect(person.text.trimEnd().split("\n").length).toBeLessThan(360);
  });

  it("no file under src/ is over 400 lines", () => {
    const long = files.filter((file) => file.text.trimEnd().split("\n").length > 400);
    expect(long.map((file) => file.path)).toEqual([]);
  });

  it("nothing in the Worker imports the fixtures (the demo world)", () => {
    const worker = files.filter((file) => !file.path.startsWith("src/fixtures/"));
    expect(importsInto(worker, ["src/fixtures/"])).toEqual([]);
  });

  it("no comment under src/ cites the seed document (`[seed …]`, `contract §…`): it is not in the repository", () => {
    // Comments cite the project's own docs instead (docs/decisions.md and the other docs/ pages, or an
    // OpenAPI component).
    const offenders = files.flatMap((file) =>
      file.text
        .split("\n")
        .map((line, i) => ({ line, at: `${file.path}:${i + 1}` }))
        .filter(({ line }) => citesSeed(line))
        .map(({ at, line }) => `${at}: ${line.trim()}`),
    );
    expect(offenders).toEqual([]);
  });

  it("one writer of KV: every put or delete on a KV namespace under src/ is in src/db/kv-writes.ts", () => {
    // docs/architecture.md, "The trust index" ("One writer of due keys"): the index work, the objects'
    // key writer, the token checks' fills, the erasure's deletes and the rebuild's marks all write there.
    const sites = files.flatMap((file) => kvWrites(file.text).map((call) => `${file.path}: ${call}`));
    expect(sites.length).toBeGreaterThan(0);
    expect(sites.filter((site) => !site.startsWith(`${KV_WRITER}:`))).toEqual([]);
  });

  it("one writer of the Person object's alarm: only scheduler.ts sets or deletes it under src/objects/person/", () => {
    // docs/architecture.md, "The Person object": the scheduler orders the alarm's reads and sets, so no call
    // elsewhere may set a later alarm over a sooner one.
    const sites = files
      .filter((file) => file.path.startsWith("src/objects/person/"))
      .flatMap((file) => alarmWrites(file.text).map((call) => `${file.path}: ${call}`));
    expect(sites.length).toBeGreaterThan(0);
    expect(sites.filter((site) => !site.startsWith("src/objects/person/scheduler.ts:"))).toEqual([]);
  });

  it("the checks catch what they look for", () => {
    expect(alarmWrites("await this.ctx.storage.setAlarm(now);\nstorage.deleteAlarm()\nstorage.getAlarm()")).toEqual([
      "setAlarm(",
      "deleteAlarm(",
    ]);
    expect(kvWrites("await kv.put(key, value);\nawait deps.kv.delete(key);\nenv.TRUST_INDEX?.put(k, v)")).toEqual([
      "kv.put(",
      "deps.kv.delete(",
      "env.TRUST_INDEX?.put(",
    ]);
    expect(kvWrites("this.ctx.storage.kv.put(KEY, 1); cache.delete(hash); db.delete(table)")).toEqual([]);
    expect(citesSeed(" * The Person of [seed 2.10]: every field")).toBe(true);
    expect(citesSeed("// trust-lookup [seed 4.1 rule 2]")).toBe(true);
    expect(citesSeed(" * HTTP Basic (contract §11.3)")).toBe(true);
    expect(citesSeed(' * (docs/decisions.md, "Contacts"); RFC 9110 §6.6.1')).toBe(false);
    const handler = { path: "src/routes/x/x.handlers.ts", text: 'import { a } from "../../routes/y";\nc.env.DB;' };
    expect(/\bc\s*\.\s*env\b/.test(handler.text)).toBe(true);
    expect(/\bc\s*\.\s*var\s*\.\s*db\b/.test("await list(c.var.db, 1)")).toBe(true);
    expect(/\bc\s*\.\s*var\s*\.\s*db\b/.test("await list(c.var.deps.db, 1)")).toBe(false);
    expect(importsOf({ path: "src/services/x.ts", text: 'import { a } from "../routes/y/y.schemas";' })).toEqual([
      "src/routes/y/y.schemas",
    ]);
    expect(importsOf({ path: "src/lib/x.ts", text: 'import type { AppEnv } from "../types";' })).toEqual(["src/types"]);
    expect(importsInto([{ path: "src/db/x.ts", text: 'export { a } from "../routes/y";' }], ["src/routes/"])).toEqual([
      "src/db/x.ts imports src/routes/y",
    ]);
  });
});

/** The calls that set or delete a Durable Object's alarm in `text`. */
function alarmWrites(text: string): string[] {
  return [...text.matchAll(/\b(setAlarm|deleteAlarm)\s*\(/g)].map((match) => `${match[1]}(`);
}

/** The one module that writes KV (docs/architecture.md, "The trust index"). */
const KV_WRITER = "src/db/kv-writes.ts";
/** The Worker's KV bindings, as wrangler's generated types declare them (`NAME: KVNamespace;`). */
const KV_BINDINGS = [...workerTypes.matchAll(/^\s*(\w+): KVNamespace;/gm)].map((match) => match[1]!);
/**
 * The put and delete calls on a KV namespace in `text`: a receiver named `kv` (however reached:
 * `deps.kv`, `this.kv`) or a KV binding (`env.TRUST_INDEX`); a Durable Object's own storage
 * (`storage.kv`) is not KV.
 */
function kvWrites(text: string): string[] {
  const bindings = new Set(["kv", "KV", "TRUST_INDEX", ...KV_BINDINGS]);
  return [...text.matchAll(/\b([\w$]+(?:\??\.[\w$]+)*)\??\.(put|delete)\s*\(/g)]
    .filter((match) => {
      const parts = match[1]!.split(/\??\./);
      return bindings.has(parts.at(-1)!) && parts.at(-2) !== "storage";
    })
    .map((match) => match[0].replace(/\s+/g, ""));
}

/**
 * The folders docs/architecture.md's "Layout" picture names under `src/`: a
 * line's first word ending in `/`, nested by two spaces per level;
 * `<area>/` stands for every folder at its place.
 */
function pictureFolders(markdown: string): string[] {
  const section = markdown.slice(markdown.indexOf("\n## Layout\n"));
  const block = /```\n([\s\S]*?)```/.exec(section)![1]!;
  const stack: string[] = [];
  const folders: string[] = [];
  for (const line of block.split("\n")) {
    const match = /^( *)(\S+\/)(?:\s|$)/.exec(line);
    if (!match) continue;
    const depth = match[1]!.length / 2;
    stack.length = depth;
    stack.push(match[2]!.replace(/\/$/, ""));
    if (stack[0] === "src") folders.push(stack.join("/"));
  }
  return folders;
}

describe("docs/architecture.md's layout picture", () => {
  const named = pictureFolders(architectureDoc);
  const matches = (folder: string, pattern: string) =>
    new RegExp(`^${pattern.replace(/<[^>]+>/g, "[^/]+")}$`).test(folder);
  const existing = [...new Set(files.flatMap((file) => ancestors(file.path)))];

  it("is read as expected", () => {
    expect(named).toContain("src");
    expect(named).toContain("src/services/employees");
  });

  it("names every folder of src/ and of src/services/", () => {
    const listed = existing.filter((folder) => /^src\/[^/]+$/.test(folder) || /^src\/services\/[^/]+$/.test(folder));
    const unnamed = listed.filter(
      (folder) => !named.some((pattern) => matches(folder, pattern) || pattern.startsWith(`${folder}/`)),
    );
    expect(unnamed).toEqual([]);
  });

  it("names no folder that does not exist", () => {
    expect(named.filter((pattern) => !existing.some((folder) => matches(folder, pattern)))).toEqual([]);
  });
});

/** The folders a file is in: `src/a/b.ts` → `src`, `src/a`. */
function ancestors(path: string): string[] {
  const parts = path.split("/").slice(0, -1);
  return parts.map((_, i) => parts.slice(0, i + 1).join("/"));
}
