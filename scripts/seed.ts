// `npm run db:seed`: loads the demo world (README, "The demo world") into the local D1
// that `wrangler dev` uses, with the same loader the tests use. Idempotent.
import path from "node:path";
import { getPlatformProxy } from "wrangler";
import { createDb } from "../src/db/client";
import { DEMO, loadDemoWorld } from "../src/fixtures/demo-world";

if (process.argv.includes("--remote")) {
  console.error("✖ The demo world holds well-known tokens; it is never loaded into a remote database.");
  process.exit(1);
}

// `--persist-to <dir>`: the state folder of `wrangler dev --persist-to <dir>` (the browser test's own).
const persistTo = process.argv[process.argv.indexOf("--persist-to") + 1];
const persist = process.argv.includes("--persist-to") && persistTo ? { path: path.join(persistTo, "v3") } : true;
const { env, dispose } = await getPlatformProxy<Env>({ configPath: "wrangler.toml", persist });
try {
  await loadDemoWorld(createDb(env.DB));
  console.error(`  demo world loaded; tokens: ${Object.values(DEMO.tokens).join(", ")}`);
} finally {
  await dispose();
}
