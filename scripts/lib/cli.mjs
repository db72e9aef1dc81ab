// Shared plumbing for the operator scripts: run the project's own binaries
// (node_modules/.bin first on PATH, so wrangler gets the project's Node 22),
// report steps, and run SQL on the local or remote D1 through wrangler.
import { spawn, spawnSync } from "node:child_process";
import net from "node:net";
import path from "node:path";
import { fileURLToPath } from "node:url";

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const BIN = path.join(ROOT, "node_modules", ".bin");

/** Environment for child processes: the project's binaries come first. */
export const childEnv = (extra = {}) => ({
  ...process.env,
  WRANGLER_SEND_METRICS: "false",
  PATH: `${BIN}${path.delimiter}${process.env.PATH ?? ""}`,
  ...extra,
});

export const bin = (name) => path.join(BIN, name);

export function step(message) {
  process.stderr.write(`\n▸ ${message}\n`);
}

/** Prints the message and exits: `code` 1 for a failure, 2 for a command line the script does not take. */
export function fail(message, code = 1) {
  process.stderr.write(`\n✖ ${message}\n`);
  process.exit(code);
}

/** Runs a project binary, streaming its output; exits with a clear message when it fails. */
export function run(name, args, { env = {}, what = `${name} ${args.join(" ")}` } = {}) {
  const result = spawnSync(bin(name), args, { cwd: ROOT, stdio: ["ignore", "inherit", "inherit"], env: childEnv(env) });
  if (result.error) fail(`${what} could not start: ${result.error.message}. Did you run \`npm ci\`?`);
  if (result.status !== 0) fail(`${what} failed (exit ${result.status}).`);
}

/**
 * Runs a project binary quietly and returns what it printed (stdout and stderr,
 * interleaved as far as two pipes allow). When it fails, everything it printed is
 * shown before the same failure as `run`'s, so nothing is lost.
 */
export function runQuiet(name, args, { env = {}, what = `${name} ${args.join(" ")}` } = {}) {
  const result = spawnSync(bin(name), args, {
    cwd: ROOT,
    encoding: "utf8",
    stdio: ["ignore", "pipe", "pipe"],
    env: childEnv(env),
    maxBuffer: 64 * 1024 * 1024,
  });
  if (result.error) fail(`${what} could not start: ${result.error.message}. Did you run \`npm ci\`?`);
  const output = `${result.stdout ?? ""}${result.stderr ?? ""}`;
  if (result.status !== 0) {
    process.stderr.write(output);
    fail(`${what} failed (exit ${result.status}).`);
  }
  return output;
}

/**
 * Parses `--flag value`, `--flag=value` and repeated flags (arrays); the rest are positionals.
 * A switch (named in `switches`) is a boolean: `--switch` is true, and it takes `true` or `false`
 * as `--switch=false` or `--switch false` (the next argument, only when it is one of those two);
 * the last one given wins. Any other value of a switch is a usage error (exit 2). `options` names
 * the flags that take a value; a flag named in neither list is a usage error (exit 2), so a
 * mistyped or another script's flag is refused, never silently ignored. A script that reads no
 * `--help` of its own gives `usage`: `--help` prints it and exits 0.
 */
export function parseArgs(argv, { switches = [], options = [], usage } = {}) {
  if (usage !== undefined && !switches.includes("help") && argv.includes("--help")) {
    console.error(usage);
    process.exit(0);
  }
  const flags = {};
  const positionals = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (!arg.startsWith("--")) {
      positionals.push(arg);
      continue;
    }
    let [name, value] = arg.slice(2).split(/=(.*)/s, 2);
    if (!switches.includes(name) && !options.includes(name)) {
      const known = [...options, ...switches].map((flag) => `--${flag}`).join(", ");
      fail(`unknown option --${name}${known ? ` (this command takes ${known})` : " (this command takes none)"}.`, 2);
    }
    if (switches.includes(name)) {
      if (value === undefined && (argv[i + 1] === "true" || argv[i + 1] === "false")) value = argv[++i];
      if (value !== undefined && value !== "true" && value !== "false")
        fail(`--${name} is a switch: give it alone, or as --${name}=true or --${name}=false (got "${value}").`, 2);
      flags[name] = value !== "false";
      continue;
    }
    if (value === undefined) {
      value = argv[++i];
      if (value === undefined) fail(`--${name} needs a value`);
    }
    flags[name] = name in flags ? [flags[name], value].flat() : value;
  }
  return { flags, positionals };
}

/** Fails (exit 2) when a command got more positionals than the `max` it takes. */
export function noMorePositionals(command, positionals, max, usage = "") {
  const extra = positionals.slice(max);
  if (extra.length > 0) {
    fail(
      `${command} takes ${max === 0 ? "no arguments" : `at most ${max} argument${max === 1 ? "" : "s"}`} ` +
        `besides its --options; unexpected: ${extra.map((arg) => JSON.stringify(arg)).join(" ")}.${usage ? `\n\n${usage}` : ""}`,
      2,
    );
  }
}

/**
 * Runs SQL on the D1 database `DB`: the local one that `npm run dev` uses,
 * or with `remote` the production one. Returns the rows of each statement.
 * Only values the scripts have validated themselves are put into the SQL.
 */
export function d1(sql, { remote = false } = {}) {
  const target = remote ? ["--remote", "--env", "production"] : ["--local"];
  const result = spawnSync(bin("wrangler"), ["d1", "execute", "DB", ...target, "--json", "--command", sql], {
    cwd: ROOT,
    encoding: "utf8",
    env: childEnv({ CI: "1" }),
    maxBuffer: 64 * 1024 * 1024,
  });
  if (result.error) fail(`wrangler could not start: ${result.error.message}. Did you run \`npm ci\`?`);
  if (result.status !== 0) {
    fail(`D1 ${remote ? "remote" : "local"} query failed:\n${(result.stderr || result.stdout).trim()}`);
  }
  const parsed = JSON.parse(result.stdout);
  return parsed.map((statement) => statement.results ?? []);
}

export const sqlString = (value) => `'${String(value).replaceAll("'", "''")}'`;

/**
 * Waits until `${base}/healthz` answers 200: true then; false when `seconds` pass, or at once when
 * `alive()` says the server being waited for has exited.
 */
export async function waitForHealth(base, { seconds = 90, alive = () => true } = {}) {
  const deadline = Date.now() + seconds * 1000;
  while (Date.now() < deadline && alive()) {
    try {
      if ((await fetch(`${base}/healthz`)).ok) return true;
    } catch {
      // not up yet
    }
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  return false;
}

/** `n` distinct TCP ports on 127.0.0.1 that were free a moment ago (all held at once while chosen). */
export async function freePorts(n = 1) {
  const servers = await Promise.all(
    Array.from(
      { length: n },
      () =>
        new Promise((resolve, reject) => {
          const server = net.createServer();
          server.once("error", reject);
          server.listen(0, "127.0.0.1", () => resolve(server));
        }),
    ),
  );
  const ports = servers.map((server) => /** @type {net.AddressInfo} */ (server.address()).port);
  await Promise.all(servers.map((server) => new Promise((resolve) => server.close(resolve))));
  return ports;
}

/**
 * `npm run dev -- --port <port>` in its own process group (so its wrangler and workerd stop with it;
 * `stopServer`). Resolves once it served /healthz and loaded the demo world's data into people's
 * objects (scripts/dev.mjs says so on stderr); rejects when it exits or `seconds` pass first.
 */
export async function startDevServer(port, { seconds = 180 } = {}) {
  const child = spawn("npm", ["run", "-s", "dev", "--", "--port", String(port)], {
    cwd: ROOT,
    env: childEnv(),
    stdio: ["ignore", "ignore", "pipe"],
    detached: true,
  });
  let log = "";
  const ready = new Promise((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`npm run dev was not ready within ${seconds} s:\n${log}`)),
      seconds * 1000,
    );
    child.stderr.on("data", (chunk) => {
      log = (log + chunk).slice(-8000);
      if (/the demo world's data in people's own objects is loaded|✖ /.test(log)) {
        clearTimeout(timer);
        if (log.includes("✖ ")) reject(new Error(`npm run dev could not load the demo world:\n${log}`));
        else resolve();
      }
    });
    child.on("exit", (code) => {
      clearTimeout(timer);
      if (!child.stopping) reject(new Error(`npm run dev exited (${code}):\n${log}`));
    });
  });
  return { server: child, api: `http://127.0.0.1:${port}`, ready };
}

/** Stops a server started in its own process group (`startDevServer`) by its PID, and waits for it. */
export async function stopServer(child) {
  if (child.exitCode !== null) return;
  const exited = new Promise((resolve) => child.once("exit", resolve));
  child.stopping = true;
  try {
    process.kill(-child.pid, "SIGTERM");
  } catch {
    return;
  }
  const timer = setTimeout(() => {
    try {
      process.kill(-child.pid, "SIGKILL");
    } catch {
      // already gone
    }
  }, 10_000);
  await exited;
  clearTimeout(timer);
  step(`Stopped the server (pid ${child.pid})`);
}
