// `npm run db:seed`: loads the demo world (README, "The demo world") into the local D1
// that `wrangler dev` uses, with the same loader the tests use. Idempotent.
//
// The D1 binding alone, on Miniflare over `wrangler dev`'s state folder: wrangler's
// getPlatformProxy would also bind the Person objects without their class (it runs no Worker
// code), and workerd then fires the objects' alarms that came due while the server was stopped
// into a class it does not have ("no such actor class; c = Person", with its stack, on a restart).
import path from "node:path";
import { Log, LogLevel, Miniflare, convertV4MiniflareOptions } from "miniflare";
import { unstable_getMiniflareWorkerOptions } from "wrangler";
import { createDb } from "../src/db/client";
import { DEMO, loadDemoWorld } from "../src/fixtures/demo-world";

if (process.argv.includes("--remote")) {
  console.error("✖ The demo world holds well-known tokens; it is never loaded into a remote database.");
  process.exit(1);
}

// `--persist-to <dir>`: the state folder of `wrangler dev --persist-to <dir>` (the browser test's own).
const persistTo = process.argv[process.argv.indexOf("--persist-to") + 1];
const state = process.argv.includes("--persist-to") && persistTo ? path.join(persistTo, "v3") : ".wrangler/state/v3";
const { workerOptions } = unstable_getMiniflareWorkerOptions("wrangler.toml");
const database = (workerOptions.d1Databases as Record<string, { id: string }> | undefined)?.DB;
if (!database) throw new Error("wrangler.toml binds no D1 database as DB");
const mf = new Miniflare(
  convertV4MiniflareOptions({
    modules: true,
    script: "",
    d1Databases: { DB: database.id },
    // Where `wrangler dev` and `wrangler d1 migrations apply --local` keep their state.
    resourcePersistencePath: path.resolve(state),
    cf: false, // no Request.cf to fetch from Cloudflare: the loader makes no request
    log: new Log(LogLevel.WARN),
  }),
);
try {
  await loadDemoWorld(createDb(await mf.getD1Database("DB")));
  console.error(`  demo world loaded; tokens: ${Object.values(DEMO.tokens).join(", ")}`);
} finally {
  await mf.dispose();
}
