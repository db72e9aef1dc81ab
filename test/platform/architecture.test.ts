import { describe, expect, it } from "vitest";
import architectureDoc from "../../docs/architecture.md?raw";
import workerTypes from "../../src/worker-configuration.d.ts?raw";
import type { PersonStub } from "../../src/objects/person/stub";
import { personObjectsFrom } from "../../src/services/person-objects";

/**
 * The layering of docs/architecture.md ("Layout"), checked on the source text:
 * the arrows between the folders of src/ (the matrix below), no loop between
 * files but the schema's, route handlers reaching bindings only through
 * `c.var.deps`, and the rules of single writers.
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

/**
 * The repository paths a file imports from (relative specifiers only), without extension: `import`,
 * `import type`, `export … from`, a bare `import "…"` and `import("…")`.
 */
function importsOf(file: { path: string; text: string }): string[] {
  const specifiers = [
    ...file.text.matchAll(/^\s*(?:import|export)\b[^;]*?\bfrom\s*["']([^"']+)["']/gm),
    ...file.text.matchAll(/^\s*import\s*["']([^"']+)["']/gm),
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

/** Whether a handler's text reads the bindings itself (`c.env`, or `env` taken out of `c`). */
const readsEnv = (text: string) => /\bc\s*\.\s*env\b/.test(text) || /\{[^}]*\benv\b[^}]*\}\s*=\s*c\b/.test(text);
/** Whether a handler's or middleware's text reads a bare D1 client off the context (`c.var.db`, `c.get("db")`). */
const readsBareDb = (text: string) =>
  /\bc\s*\.\s*var\s*\.\s*db\b/.test(text) ||
  /\bc\s*\.\s*get\(\s*["']db["']\s*\)/.test(text) ||
  /\{[^}]*\bdb\b[^}]*\}\s*=\s*c\s*\.\s*var\b/.test(text);
/** Whether a handler hands a service the database alone (`c.var.deps.db`) instead of the handle. */
const passesDepsDb = (text: string) => /\bc\s*\.\s*var\s*\.\s*deps\s*\.\s*db\b/.test(text);

/** The module graph of src/ (ambient `.d.ts` files left out): each file's path without extension → the files it imports. */
const code = files.filter((file) => !file.path.endsWith(".d.ts"));
const modules = new Set(code.map((file) => file.path.replace(/\.ts$/, "")));
const graph = new Map(
  code.map((file) => [
    file.path.replace(/\.ts$/, ""),
    importsOf(file)
      .map((target) => (modules.has(target) ? target : `${target}/index`))
      .filter((target) => modules.has(target)),
  ]),
);

/** The loops of a graph: its strongly connected components of more than one file (Tarjan's), each sorted. */
function loopsOf(edges: Map<string, string[]>): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const loops: string[][] = [];
  const visit = (node: string) => {
    index.set(node, index.size);
    low.set(node, index.get(node)!);
    stack.push(node);
    for (const next of edges.get(node) ?? []) {
      if (!index.has(next)) {
        visit(next);
        low.set(node, Math.min(low.get(node)!, low.get(next)!));
      } else if (stack.includes(next)) low.set(node, Math.min(low.get(node)!, index.get(next)!));
    }
    if (low.get(node) !== index.get(node)) return;
    const component = stack.splice(stack.indexOf(node));
    if (component.length > 1 || edges.get(node)?.includes(node)) loops.push(component.sort());
  };
  for (const node of edges.keys()) if (!index.has(node)) visit(node);
  return loops;
}

/**
 * The one loop allowed: drizzle's schema files for companies, licenses and
 * people, which reference each other's tables (foreign keys and relations).
 */
const SCHEMA_TRIO = ["src/db/schema/companies", "src/db/schema/licenses", "src/db/schema/people"];

/**
 * The arrows allowed between the parts of src/: a row imports from the
 * columns it marks (`x`), type imports included. `app` is the Worker's entry
 * (src/index.ts, src/app.ts), `types` the request's Hono environment
 * (src/types.ts); every other part is a folder. The parts are in layer order,
 * so every arrow points right of the diagonal: down the layers. An import
 * outside the table fails the test below; add its `x` only where the layer
 * truly needs it (docs/architecture.md, "Layout").
 */
const MATRIX = `
              app routes middleware types queue cron fixtures services objects db domain lib
  app          .    x       x        .     x     x      .        .        x     .    .     x
  routes       .    .       x        x     .     .      .        x        .     x    x     x
  middleware   .    .       .        x     .     .      .        x        .     x    x     x
  types        .    .       .        .     .     .      .        x        .     .    x     .
  queue        .    .       .        .     .     .      .        x        .     .    x     x
  cron         .    .       .        .     .     .      .        x        .     .    x     x
  fixtures     .    .       .        .     .     .      .        x        .     x    .     x
  services     .    .       .        .     .     .      .        .        x     x    x     x
  objects      .    .       .        .     .     .      .        .        .     x    x     x
  db           .    .       .        .     .     .      .        .        .     .    x     x
  domain       .    .       .        .     .     .      .        .        .     .    .     x
  lib          .    .       .        .     .     .      .        .        .     .    .     .
`;

/** The matrix read: its parts in order, and the allowed arrows as `from -> to`. */
function readMatrix(table: string): { parts: string[]; allowed: Set<string> } {
  const [head, ...rows] = table
    .trim()
    .split("\n")
    .map((line) => line.trim().split(/\s+/));
  const allowed = new Set<string>();
  for (const [from, ...marks] of rows) {
    if (marks.length !== head!.length) throw new Error(`matrix row ${from} has ${marks.length} marks`);
    marks.forEach((mark, i) => mark === "x" && allowed.add(`${from} -> ${head![i]}`));
  }
  return { parts: head!, allowed };
}

/** The part of src/ a module is in (`src/services/push/index` → `services`). */
const partOf = (module: string) =>
  module === "src/index" || module === "src/app" ? "app" : module === "src/types" ? "types" : module.split("/")[1]!;

describe("architecture", () => {
  it("reads every source file (the checks below see the whole tree)", () => {
    expect(under("src/routes/").length).toBeGreaterThan(20);
    expect(under("src/services/").length).toBeGreaterThan(20);
    expect(under("src/db/").length).toBeGreaterThan(5);
    expect(files.some((file) => file.path === "src/services/outbox.ts")).toBe(true);
  });

  it("no loop in the module graph but the schema trio (type imports count)", () => {
    // docs/architecture.md, "Layout": a file's imports never lead back to it, so each can be read (and
    // moved) after what it imports; drizzle's three schema files reference each other's tables.
    expect(loopsOf(graph)).toEqual([SCHEMA_TRIO]);
  });

  it("every import between parts of src/ is an arrow of the matrix", () => {
    const { allowed } = readMatrix(MATRIX);
    const outside = [...graph].flatMap(([from, targets]) =>
      targets
        .filter((to) => partOf(from) !== partOf(to) && !allowed.has(`${partOf(from)} -> ${partOf(to)}`))
        .map((to) => `${partOf(from)} -> ${partOf(to)}: ${from} imports ${to}`),
    );
    expect(outside).toEqual([]);
  });

  it("the matrix names every part of src/ once, and its arrows point down the layers", () => {
    const { parts, allowed } = readMatrix(MATRIX);
    expect(new Set(parts).size).toBe(parts.length);
    expect([...new Set([...graph.keys()].map(partOf))].sort()).toEqual([...parts].sort());
    const up = [...allowed].filter((arrow) => {
      const [from, to] = arrow.split(" -> ");
      return parts.indexOf(to!) <= parts.indexOf(from!);
    });
    expect(up).toEqual([]);
  });

  it("only the entry points build the dependency handle: services/create-deps.ts is imported by no service", () => {
    // The middleware builds it per request, the queue consumers and the cron per run; a service that
    // imported the builder would sit in a loop with the services it builds.
    const importers = [...graph]
      .filter(([, targets]) => targets.includes("src/services/create-deps"))
      .map(([from]) => from)
      .filter((from) => !["middleware", "queue", "cron"].includes(partOf(from)));
    expect(importers).toEqual([]);
  });

  it("objects.of() is a read-only view of a person's object: a write RPC through it does not compile", async () => {
    // The check is the compiler's (`npx tsc --noEmit` runs over test/): writes go through `objects.write`,
    // which runs the request's pending token check first (services/person-objects.ts).
    const calls: string[] = [];
    const stub = { erase: async () => void calls.push("erase"), callPolicy: () => "everyone" } as unknown as PersonStub;
    const guarded: string[] = [];
    const objects = personObjectsFrom(() => stub, {
      check: async () => void guarded.push("checked"),
      wrote: () => void guarded.push("wrote"),
    });
    // @ts-expect-error erasing writes: it is not on the view `of` answers
    expect(typeof objects.of(1).erase).toBe("function");
    expect(await objects.of(1).callPolicy()).toBe("everyone");
    await objects.write(1, (person) => person.erase());
    expect([guarded, calls]).toEqual([["checked", "wrote"], ["erase"]]);
  });

  it("no file under src/routes/ reads c.env: handlers reach bindings through c.var.deps", () => {
    const offenders = under("src/routes/").filter((file) => readsEnv(file.text));
    expect(offenders.map((file) => file.path)).toEqual([]);
  });

  it("no handler or middleware reads a bare c.var.db: D1 is reached through c.var.deps, like every binding", () => {
    const offenders = [...under("src/routes/"), ...under("src/middleware/")].filter((file) => readsBareDb(file.text));
    expect(offenders.map((file) => file.path)).toEqual([]);
  });

  it("handlers hand services the one handle: no route passes c.var.deps.db (services take Deps)", () => {
    const offenders = under("src/routes/").filter((file) => passesDepsDb(file.text));
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

  it("the Worker reaches the Person object's types through its api module: only person-objects.ts builds stubs", () => {
    // What a service may import from src/objects/: the RPC types (api), the plain limits; person-objects.ts also the
    // stub (typed by the binding, so no file but src/index.ts names the class), company-objects.ts the company's
    // the same way; replay-guards.ts the replay guard
    // (its whole RPC surface is one method, typed by the class).
    const allowed = (file: string, target: string) =>
      ["src/objects/person/api", "src/objects/person/limits"].includes(target) ||
      (file === "src/services/person-objects.ts" && target === "src/objects/person/stub") ||
      (file === "src/services/company-objects.ts" && target === "src/objects/company/stub") ||
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
    expect(readsEnv('import { a } from "../../routes/y";\nc.env.DB;')).toBe(true);
    expect(readsEnv("const { env } = c;")).toBe(true);
    expect(readsEnv("c.var.deps.environment")).toBe(false);
    expect(readsBareDb("await list(c.var.db, 1)")).toBe(true);
    expect(readsBareDb('c.get("db")')).toBe(true);
    expect(readsBareDb("await list(c.var.deps.db, 1)")).toBe(false);
    expect(passesDepsDb("await list(c.var.deps.db, 1)")).toBe(true);
    expect(passesDepsDb("await list(c.var.deps, 1)")).toBe(false);
    expect(importsOf({ path: "src/services/x.ts", text: 'import { a } from "../routes/y/y.schemas";' })).toEqual([
      "src/routes/y/y.schemas",
    ]);
    expect(importsOf({ path: "src/lib/x.ts", text: 'import type { AppEnv } from "../types";' })).toEqual(["src/types"]);
    expect(importsOf({ path: "src/db/x.ts", text: 'export { a } from "../routes/y";\nimport "./side";' })).toEqual([
      "src/routes/y",
      "src/db/side",
    ]);
    expect(
      loopsOf(
        new Map([
          ["a", ["b"]],
          ["b", ["c"]],
          ["c", ["a"]],
          ["d", ["a"]],
        ]),
      ),
    ).toEqual([["a", "b", "c"]]);
    expect(
      loopsOf(
        new Map([
          ["a", ["b"]],
          ["b", []],
        ]),
      ),
    ).toEqual([]);
    expect(partOf("src/services/push/index")).toBe("services");
    expect(partOf("src/index")).toBe("app");
    expect(partOf("src/types")).toBe("types");
    expect(readMatrix(" a b\n a . x\n b . .").allowed).toEqual(new Set(["a -> b"]));
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
