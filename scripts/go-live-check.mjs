// `node scripts/go-live-check.mjs [--api <url>]`: runs the README's "Go live"
// block against a local server, as written except that `API=` points at that
// server and `--remote` is dropped (tokens go to the local D1), then checks
// the tenant it built through the API (its license, seats and employees too). Without --api it starts `npm run dev`
// (on 8787; when that port is taken, the same steps on a free port) and stops
// it by its PID at the end. Reruns are fine: the rows a previous run created
// (the block's slugs, emails and licenses) are deleted from the local D1 first.
import { spawn, spawnSync } from "node:child_process";
import fs from "node:fs";
import net from "node:net";
import path from "node:path";
import {
  ROOT,
  bin,
  childEnv,
  d1,
  fail,
  freePorts,
  parseArgs,
  run,
  sqlString,
  step,
  stopServer,
  waitForHealth,
} from "./lib/cli.mjs";

const { flags } = parseArgs(process.argv.slice(2), { switches: ["help"], options: ["api"] });
if (flags.help) {
  console.error("Usage: node scripts/go-live-check.mjs [--api <url of a local npm run dev server>]");
  process.exit(0);
}
const started = Date.now();

const block = goLiveBlock();
const slugs = [...block.matchAll(/--slug (\S+)/g)].map((m) => m[1]);
/** The employee the check itself creates goes too. */
const EMPLOYEE_EMAIL = "eve@initech.example";
/** Members (`--email`) and employees created with curl (`"email": "…"`). */
const emails = [...block.matchAll(/--email (\S+)|"email": "([^"]+)"/g)].map((m) => m[1] ?? m[2]);
const licenseIds = [...block.matchAll(/admin -- license (\S+)/g)].map((m) => m[1]);
if (!slugs.length || !emails.length || !licenseIds.length) {
  fail("the README's Go live block names no --slug, --email or `admin -- license`: has it changed?");
}

let server = null;
let api = flags.api ? String(flags.api).replace(/\/+$/, "") : null;
try {
  if (!api) ({ server, api } = await startServer());
  // `fail()` exits at once: never leave the server behind.
  process.on("exit", () => {
    if (server?.exitCode === null) {
      try {
        process.kill(-server.pid, "SIGTERM");
      } catch {
        // already gone
      }
    }
  });
  await serverUp(api);

  step(
    `Removing what an earlier run created (companies ${slugs.join(", ")}; people ${emails.join(", ")}; licenses ${licenseIds.join(", ")})`,
  );
  // Removing the companies removes their seats; a license some other local company still holds stays (the block replaces it).
  const earlier = `SELECT person_id FROM person_emails WHERE email IN (${[...emails, EMPLOYEE_EMAIL].map(sqlString).join(", ")})`;
  const now = Date.now();
  d1(
    // Their tokens go with them: the index work rewrites the tokens' KV records as refused (the dev server's minute cron).
    `INSERT INTO index_work (key, version, attempts, due_at, created_at)` +
      ` SELECT 'tok:' || token_hash, 1, 0, ${now}, ${now} FROM access_tokens WHERE person_id IN (${earlier})` +
      ` ON CONFLICT (key) DO UPDATE SET version = version + 1, due_at = excluded.due_at;` +
      ` DELETE FROM people WHERE id IN (${earlier});` +
      ` DELETE FROM companies WHERE slug IN (${slugs.map(sqlString).join(", ")});` +
      ` DELETE FROM licenses WHERE id IN (${licenseIds.map(sqlString).join(", ")}) AND id NOT IN (SELECT license_id FROM company_seats);`,
  );

  step("Running the README's Go live block");
  const script = [
    "set -euo pipefail",
    "set -x",
    block.replace(/^API=.*$/m, `API=${api}`).replaceAll(" --remote", ""),
    'set +x; printf "GO_LIVE_STATE %s %s %s %s\\n" "$COMPANY" "$ADMIN" "$TOKEN" "$ADMIN_TOKEN"',
  ].join("\n");
  const result = spawnSync("bash", ["-c", script], { cwd: ROOT, env: childEnv(), encoding: "utf8" });
  process.stderr.write(result.stderr);
  process.stdout.write(result.stdout.replace(/GO_LIVE_STATE .*\n/, ""));
  if (result.status !== 0) throw new Error(`a step of the Go live block failed (exit ${result.status}); see above`);
  const [, company, admin, token, adminToken] = /GO_LIVE_STATE (\d+) (\d+) (\S+) (\S+)/.exec(result.stdout) ?? [];
  if (!adminToken) throw new Error("the block did not leave COMPANY, ADMIN, TOKEN and ADMIN_TOKEN set");

  step("Checking the tenant the block built");
  await checkTenant({ api, company: Number(company), admin: Number(admin), token, license: licenseIds[0] });
  step("Checking that the command reports the server's errors");
  for (const [bearer, status, phrase] of [
    [adminToken, 409, "Conflict"],
    [token, 403, "Forbidden"], // the Admin's person token
  ]) {
    const again = spawnSync(
      "npm",
      [
        "run",
        "-s",
        "admin",
        "--",
        "create-company",
        "employer",
        "--name",
        "Initech",
        "--slug",
        "initech",
        "--api",
        api,
      ],
      { cwd: ROOT, env: childEnv({ ADMIN_TOKEN: bearer }), encoding: "utf8" },
    );
    const last = again.stderr.trim().split("\n").at(-1);
    if (again.status === 0 || !last.includes(`answered ${status}: ${phrase}: `)) {
      throw new Error(
        `expected npm run admin to fail with the server's ${status}, got exit ${again.status}: ${again.stderr}`,
      );
    }
    process.stderr.write(`  ✓ npm run admin exits ${again.status}: ${last}\n`);
  }
  const retire = spawnSync("npm", ["run", "-s", "admin", "--", "retire-license", licenseIds[0], "--api", api], {
    cwd: ROOT,
    env: childEnv({ ADMIN_TOKEN: adminToken }),
    encoding: "utf8",
  });
  const refused = retire.stderr.trim().split("\n").at(-1);
  if (retire.status === 0 || !refused.includes("answered 409: Conflict: ")) {
    throw new Error(
      `expected retire-license ${licenseIds[0]} to be refused with 409 while Initech holds seats, got exit ${retire.status}: ${retire.stderr}`,
    );
  }
  process.stderr.write(
    `  ✓ npm run admin -- retire-license ${licenseIds[0]} exits ${retire.status} while Initech holds seats: ${refused}\n`,
  );
  if (server) {
    step("Checking that a person's own data (their Durable Object) survives a restart of the server");
    const recorded = await fetch(`${api}/apps/buzz/activity`, {
      method: "POST",
      headers: { Authorization: `Bearer ${token}`, "Content-Type": "application/json" },
      body: JSON.stringify({
        type: "outgoing_call_missed",
        sendable_type: "person",
        sendable_id: Number(admin),
        receivable_type: "company",
        receivable_id: Number(company),
      }),
    });
    if (!recorded.ok) throw new Error(`POST /apps/buzz/activity answered ${recorded.status}: ${await recorded.text()}`);
    const { id } = (await recorded.json()).data;
    const synced = await fetch(`${api}/contacts/sync`, {
      method: "POST",
      headers: { Authorization: `Bearer ${token}`, "Content-Type": "application/json" },
      body: JSON.stringify([{ display_name: "Go-live contact", phone_numbers: ["+13035550166"] }]),
    });
    if (!synced.ok) throw new Error(`POST /contacts/sync answered ${synced.status}: ${await synced.text()}`);
    const [contact] = await synced.json();
    await stopServer(server);
    ({ server, api } = await startServer());
    await serverUp(api);
    const feed = await (
      await fetch(`${api}/apps/buzz/activity/0?limit=500`, { headers: { Authorization: `Bearer ${token}` } })
    ).json();
    if (!Array.isArray(feed) || !feed.some((entry) => entry.id === id)) {
      throw new Error(`activity ${id} was gone after the restart: ${JSON.stringify(feed).slice(0, 300)}`);
    }
    process.stderr.write(`  ✓ activity ${id} of person ${admin} is still there after the restart\n`);
    const kept = await fetch(`${api}/contacts/${contact.id}`, { headers: { Authorization: `Bearer ${token}` } });
    const keptBody = await kept.json();
    if (!kept.ok || keptBody.display_name !== "Go-live contact") {
      throw new Error(`contact ${contact.id} was gone after the restart: ${kept.status} ${JSON.stringify(keptBody)}`);
    }
    process.stderr.write(`  ✓ contact ${contact.id} of person ${admin} is still there after the restart\n`);
  }
  step(`Go live check passed in ${Math.round((Date.now() - started) / 1000)} s`);
} catch (err) {
  process.stderr.write(`\n✖ ${err.message}\n`);
  process.exitCode = 1;
} finally {
  if (server) await stopServer(server);
}

/** The sh code block of the README's "## Go live" section. */
function goLiveBlock() {
  const readme = fs.readFileSync(path.join(ROOT, "README.md"), "utf8");
  const section = /^## Go live\n([\s\S]*?)(?=^## )/m.exec(readme)?.[1];
  const code = section && /```sh\n([\s\S]*?)```/.exec(section)?.[1];
  if (!code) fail('README.md has no "## Go live" section with a ```sh block.');
  return code;
}

async function checkTenant({ api, company, admin, token, license }) {
  const get = async (p, bearer = token) => {
    const response = await fetch(`${api}${p}`, { headers: bearer ? { Authorization: `Bearer ${bearer}` } : {} });
    const body = await response.json();
    if (!response.ok) throw new Error(`GET ${p} answered ${response.status}: ${JSON.stringify(body)}`);
    return body;
  };
  const expect = (ok, what) => {
    if (!ok) throw new Error(`expected ${what}`);
    process.stderr.write(`  ✓ ${what}\n`);
  };
  const tenant = await get(`/companies/${company}`);
  expect(
    tenant.name === "Initech" && tenant.status === "enabled",
    `the Admin's token reads company ${company} (Initech)`,
  );
  const roles = await get(`/companies/${company}/roles`);
  expect(
    ["Admin", "HR", "Viewer"].every((name) => roles.some((role) => role.name === name)),
    "Initech has the roles Admin, HR and Viewer",
  );
  const phones = await get(`/companies/${company}/phones`);
  expect(
    phones.some((phone) => phone.phone_full === "+14155550123" && phone.status === "verified"),
    "Initech's phone +14155550123 is listed and verified",
  );
  const sites = await get(`/companies/${company}/sites`);
  expect(
    sites.some((site) => site.name === "LookupHub" && site.scanner),
    "the site LookupHub is listed to Initech",
  );
  const container = await get("/apps/vcc/load_container/gazette", null);
  expect(
    container.company.domain === "gazette.example" && container.vendors.map((v) => v.slug).join(",") === "statly,adnet",
    "the Gazette's container lists statly, adnet in that order",
  );
  const created = await fetch(`${api}/companies/${company}/employees`, {
    method: "POST",
    headers: { Authorization: `Bearer ${token}`, "Content-Type": "application/json" },
    body: JSON.stringify({
      first_name: "Eve",
      last_name: "Employee",
      dob: "1990-01-01",
      emails: [{ email: EMPLOYEE_EMAIL }],
      addresses: [{ line_1: "1 Main St", city: "Austin", region: "TX", postal_code: "78701", country: "US" }],
      license,
    }),
  });
  expect(created.ok, `the Admin (person ${admin}) creates an employee with a \`${license}\` seat (${created.status})`);
  const employees = await get(`/companies/${company}/employees`);
  const seated = employees.filter((person) => person.license?.type === license).map((person) => person.first_name);
  expect(seated.length === 2, `two employees hold \`${license}\` seats (${seated.join(", ")})`);
  const bought = (await get(`/companies/${company}/licenses`)).find((entry) => entry.id === license);
  expect(
    bought?.num_active === 10 && bought.num_assigned === 2 && bought.num_available === 8,
    `Initech bought 10 \`${license}\` seats and 2 are assigned (${JSON.stringify(bought && { num_active: bought.num_active, num_assigned: bought.num_assigned })})`,
  );
  expect(
    bought.price === 4900 && bought.full_scan && bought.sites.map((site) => site.name).join(",") === "LookupHub",
    `\`${license}\` costs 4900 USD cents and covers LookupHub`,
  );
}

async function portTaken(port) {
  return new Promise((resolve) => {
    const socket = net.connect(port, "127.0.0.1");
    socket.once("connect", () => (socket.destroy(), resolve(true)));
    socket.once("error", () => resolve(false));
  });
}

/**
 * `npm run dev` in its own process group (so its wrangler and workerd stop
 * with it). It always serves 8787; when that is taken (another engineer's
 * server), its steps run here with a free port instead.
 */
async function startServer() {
  let child;
  let port = 8787;
  if (!(await portTaken(port))) {
    step("Starting npm run dev on http://127.0.0.1:8787");
    child = spawn("npm", ["run", "-s", "dev"], {
      cwd: ROOT,
      env: childEnv(),
      stdio: ["ignore", "ignore", "pipe"],
      detached: true,
    });
  } else {
    [port] = await freePorts();
    step(`Port 8787 is taken: migrating, seeding and starting wrangler dev on a free port, ${port}`);
    run("wrangler", ["d1", "migrations", "apply", "DB", "--local"], {
      env: { CI: "1" },
      what: "wrangler d1 migrations apply",
    });
    run("tsx", ["scripts/seed.ts"], { what: "the demo-world loader" });
    child = spawn(
      bin("wrangler"),
      ["dev", "--ip", "127.0.0.1", "--port", String(port), "--show-interactive-dev-session=false"],
      { cwd: ROOT, env: childEnv(), stdio: ["ignore", "ignore", "pipe"], detached: true },
    );
  }
  let log = "";
  child.stderr.on("data", (chunk) => (log = (log + chunk).slice(-4000)));
  child.on("exit", (code) => {
    if (code && !child.stopping) process.stderr.write(`\nthe server exited (${code}):\n${log}\n`);
  });
  return { server: child, api: `http://127.0.0.1:${port}` };
}

async function serverUp(api) {
  if (!(await waitForHealth(api, { seconds: 90 }))) throw new Error(`${api}/healthz did not answer within 90 s`);
}
