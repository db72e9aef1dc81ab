// `npm run dev`: migrate the local D1, load the demo world, then serve the
// whole API on http://127.0.0.1:8787. Unattended: no prompts, no TTY needed,
// and SIGINT/SIGTERM stop wrangler cleanly. Extra arguments go to `wrangler dev`.
import { spawn } from "node:child_process";
import { ROOT, bin, childEnv, run, step } from "./lib/cli.mjs";

step("Applying D1 migrations to the local database (.wrangler/state)");
run("wrangler", ["d1", "migrations", "apply", "DB", "--local"], {
  env: { CI: "1" },
  what: "wrangler d1 migrations apply",
});

step("Loading the demo world (README, \"The demo world\")");
run("tsx", ["scripts/seed.ts"], { what: "the demo-world loader" });

step("Starting wrangler dev on http://127.0.0.1:8787 (crons: /cdn-cgi/handler/scheduled?cron=...)");
const child = spawn(
  bin("wrangler"),
  [
    "dev",
    "--ip",
    "127.0.0.1",
    "--port",
    "8787",
    "--test-scheduled",
    "--show-interactive-dev-session=false",
    ...process.argv.slice(2),
  ],
  { cwd: ROOT, stdio: ["ignore", "inherit", "inherit"], env: childEnv() },
);

for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"]) {
  process.on(signal, () => child.kill(signal));
}
child.on("exit", (code, signal) => process.exit(code ?? (signal ? 0 : 1)));
