// `npm run dev`: migrate the local D1, load the demo world, then serve the
// whole API on http://127.0.0.1:8787 (by default). Unattended: no prompts, no TTY needed,
// and SIGINT/SIGTERM stop wrangler cleanly. The port: `npm run dev -- --port N`
// or `PORT=N npm run dev` (the flag wins); `--ip` likewise. Every other argument
// goes to `wrangler dev` as it is.
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { ROOT, bin, childEnv, fail, run, runQuiet, step, waitForHealth } from "./lib/cli.mjs";
import { loadDemoObjects } from "./lib/demo-objects.mjs";
import { vapidKeyPair } from "./lib/vapid.mjs";

const { port, ip, rest } = serverArgs(process.argv.slice(2), process.env.PORT);

step("Applying D1 migrations to the local database (.wrangler/state)");
const migrations = runQuiet("wrangler", ["d1", "migrations", "apply", "DB", "--local"], {
  env: { CI: "1" },
  what: "wrangler d1 migrations apply",
});
const applied = appliedMigrations(migrations);
if (applied === null) process.stderr.write("  none to apply: the local database is up to date\n");
else if (applied.length > 0) for (const name of applied) process.stderr.write(`  applied ${name}\n`);
else process.stderr.write(migrations); // an output this script cannot read: all of it

step('Loading the demo world (README, "The demo world")');
run("tsx", ["scripts/seed.ts"], { what: "the demo-world loader" });

const envFiles = developmentSecrets();

step(`Starting wrangler dev on http://${ip}:${port} (crons: /cdn-cgi/handler/scheduled?cron=...)`);
const child = spawn(
  bin("wrangler"),
  [
    "dev",
    "--ip",
    ip,
    "--port",
    String(port),
    "--test-scheduled",
    "--show-interactive-dev-session=false",
    ...envFiles,
    ...rest,
  ],
  { cwd: ROOT, stdio: ["ignore", "inherit", "inherit"], env: childEnv() },
);

for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"]) {
  process.on(signal, () => child.kill(signal));
}
child.on("exit", (code, signal) => process.exit(code ?? (signal ? 0 : 1)));

// The demo world's data in people's own objects goes in through the API, once the server answers.
await demoObjectsWhenReady(
  ip === "0.0.0.0" ? `http://127.0.0.1:${port}` : `http://${ip.includes(":") ? `[${ip}]` : ip}:${port}`,
);

async function demoObjectsWhenReady(local) {
  if (!(await waitForHealth(local, { seconds: 120, alive: () => child.exitCode === null }))) {
    process.stderr.write(
      "  ✖ the server did not answer /healthz within 120 s; the demo world's object data is not loaded\n",
    );
    return;
  }
  try {
    await loadDemoObjects(local);
    process.stderr.write("  the demo world's data in people's own objects is loaded\n");
    // wrangler dev runs crons only when asked: one minute-cron run applies background work left
    // by the migrations just applied (for example the index work of an upgraded local database).
    const cron = await fetch(`${local}/cdn-cgi/handler/scheduled?cron=${encodeURIComponent("* * * * *")}`);
    if (!cron.ok) process.stderr.write(`  ✖ the minute cron answered ${cron.status}\n`);
  } catch (err) {
    process.stderr.write(`  ✖ ${err.message}\n`);
  }
}

/**
 * Takes `--port N` / `--port=N` and `--ip X` / `--ip=X` out of the arguments (this
 * script sets both; wrangler refuses a flag given twice). The port falls back to
 * `PORT`, then 8787.
 */
function serverArgs(argv, envPort) {
  const taken = { port: envPort || undefined, ip: undefined };
  const rest = [];
  for (let i = 0; i < argv.length; i++) {
    const match = /^--(port|ip)(?:=(.*))?$/s.exec(argv[i]);
    if (!match) {
      rest.push(argv[i]);
      continue;
    }
    const value = match[2] ?? argv[++i];
    if (value === undefined || value === "") fail(`--${match[1]} needs a value`);
    taken[match[1]] = value;
  }
  const port = Number(taken.port ?? 8787);
  if (!Number.isInteger(port) || port < 1 || port > 65535) {
    fail(`the port must be a number from 1 to 65535, not ${JSON.stringify(taken.port)} (--port or PORT)`);
  }
  return { port, ip: taken.ip ?? "127.0.0.1", rest };
}

/**
 * The migrations wrangler applied, from its output (it prints its status table
 * once per migration): the names its last table marks done. null when it had
 * nothing to apply; [] when the output is not the one expected.
 */
function appliedMigrations(output) {
  if (/No migrations to apply/i.test(output)) return null;
  const last =
    output
      .split(/Executing on /)
      .slice(1)
      .at(-1) ?? "";
  return [...last.matchAll(/^│\s*(\S+\.sql)\s*│\s*✅/gmu)].map((match) => match[1]);
}

/**
 * The Worker's keys for development (src/secrets.d.ts): generated once per checkout into
 * .wrangler/dev-secrets.env (never committed), plus .dev.vars when it exists (a real provider's
 * credentials, .dev.vars.example), whose values win. Returns wrangler's `--env-file` arguments.
 */
function developmentSecrets() {
  const file = path.join(ROOT, ".wrangler", "dev-secrets.env");
  const keys = [
    "CODE_KEY",
    "STREAM_TICKET_KEY",
    "PROVIDER_SECRET_KEYS",
    "VAPID_PUBLIC_KEY",
    "VAPID_PRIVATE_KEY",
    "VAPID_SUBJECT",
  ];
  const found = existsSync(file) ? readFileSync(file, "utf8") : "";
  // The VAPID keys are a pair: one without the other is made again with a new partner.
  const pairMissing = !/^VAPID_PUBLIC_KEY=/m.test(found) || !/^VAPID_PRIVATE_KEY=/m.test(found);
  const have = pairMissing ? found.replace(/^VAPID_(PUBLIC|PRIVATE)_KEY=.*\n?/gm, "") : found;
  const missing = keys.filter((key) => !new RegExp(`^${key}=`, "m").test(have));
  if (missing.length > 0) {
    const vapid = vapidKeyPair();
    const value = (key) => {
      if (key === "VAPID_PUBLIC_KEY") return vapid.publicKey;
      if (key === "VAPID_PRIVATE_KEY") return vapid.privateKey;
      if (key === "VAPID_SUBJECT") return "mailto:developer@example.com";
      const secret = randomBytes(32).toString("base64url");
      return key === "PROVIDER_SECRET_KEYS" ? `dev1:${secret}` : secret;
    };
    mkdirSync(path.dirname(file), { recursive: true });
    writeFileSync(file, have + missing.map((key) => `${key}=${value(key)}\n`).join(""), { mode: 0o600 });
    process.stderr.write(`  generated development keys (${missing.join(", ")}) in .wrangler/dev-secrets.env\n`);
  }
  const files = ["--env-file", file];
  if (existsSync(path.join(ROOT, ".dev.vars"))) files.push("--env-file", path.join(ROOT, ".dev.vars"));
  return files;
}
