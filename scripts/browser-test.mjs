// `npm run test:browser`: the consent container in a real browser (Debian's
// Chromium driven by playwright-core), as docs/consent.md describes it.
//
// Starts, in a temp folder: a throwaway TLS certificate (openssl), the Worker
// (`wrangler dev` over https on a free port, its own D1 with the demo world)
// and an https server for the publisher's pages. Test hostnames are mapped to
// 127.0.0.1 by Chromium's --host-resolver-rules:
//   https://api.privacy.example:<port>   the API (the frame's origin)
//   https://dailynews.example:<port>     the publisher (a different site)
//   https://evil.example:<port>          another site
// Scenarios: a signed-in visitor with DEFAULT cookie settings is recognised
// through the frame after the storage-access step, sees and changes their
// vendor trust; an anonymous visitor gets is_authenticated false; another
// origin gets no postMessage and no CORS grant; the plain credentialed fetch
// works in a profile that allows third-party cookies. Screenshots go to the
// temp folder (printed). Everything started is stopped by PID at the end.
import { spawn, spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync, existsSync } from "node:fs";
import https from "node:https";
import os from "node:os";
import path from "node:path";
import { chromium } from "playwright-core";
import { ROOT, bin, childEnv, freePorts } from "./lib/cli.mjs";
import { loadDemoObjects } from "./lib/demo-objects.mjs";

const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";
const DEADLINE_MS = 110_000;
const started = Date.now();
const tmp = mkdtempSync(path.join(os.tmpdir(), "vcc-browser-"));
const shots = path.join(tmp, "screenshots");
mkdirSync(shots);

const children = []; // { name, pid }
const closers = [];
let failed = false;

const log = (message) =>
  process.stderr.write(`${((Date.now() - started) / 1000).toFixed(1).padStart(5)}s  ${message}\n`);
function check(condition, what) {
  if (!condition) throw new Error(`FAILED: ${what}`);
  log(`ok  ${what}`);
}

const watchdog = setTimeout(() => {
  log(`✖ gave up after ${DEADLINE_MS / 1000} s`);
  failed = true;
  void stopAll().finally(() => process.exit(1));
}, DEADLINE_MS);

try {
  if (!existsSync(CHROMIUM))
    throw new Error(`no Chromium at ${CHROMIUM}: apt-get install -y chromium (or set CHROMIUM_PATH)`);
  await main();
  log(`✔ all browser scenarios passed; screenshots in ${shots}`);
} catch (err) {
  failed = true;
  log(`✖ ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
  log(`screenshots in ${shots}; logs in ${tmp}`);
} finally {
  clearTimeout(watchdog);
  await stopAll();
  process.exit(failed ? 1 : 0);
}

async function main() {
  const hosts = ["api.privacy.example", "dailynews.example", "www.dailynews.example", "evil.example"];
  const { key, cert } = makeCertificate(hosts);
  const [apiPort, pubPort, inspectorPort] = await freePorts(3);
  const API = `https://api.privacy.example:${apiPort}`;
  const PUBLISHER = `https://dailynews.example:${pubPort}`;
  const EVIL = `https://evil.example:${pubPort}`;

  // The publisher's port is taken at once: `freePorts` only found it free, and the worker's setup
  // (migrations, seeding: about 20 s) gave other processes time to take it (EADDRINUSE in CI).
  await startPublisher({ key, cert, pubPort, API });
  await startWorker({ key, cert, apiPort, inspectorPort });

  const launch = async (name, preferences) => {
    const dir = path.join(tmp, `profile-${name}`);
    if (preferences) {
      mkdirSync(path.join(dir, "Default"), { recursive: true });
      writeFileSync(path.join(dir, "Default", "Preferences"), JSON.stringify(preferences));
    }
    const context = await chromium.launchPersistentContext(dir, {
      executablePath: CHROMIUM,
      headless: true,
      ignoreHTTPSErrors: true,
      viewport: { width: 900, height: 640 },
      args: [
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--ignore-certificate-errors",
        "--host-resolver-rules=MAP * 127.0.0.1",
      ],
    });
    closers.push(() => context.close());
    return context;
  };

  /** Signs the browser in as a top-level visit to the API: POST /apps/vcc/session with a person token. */
  const signIn = async (page, token) => {
    await page.goto(`${API}/healthz`);
    await page.click("body");
    const status = await page.evaluate(async (t) => {
      const r = await fetch("/apps/vcc/session", { method: "POST", headers: { Authorization: `Bearer ${t}` } });
      return r.status;
    }, token);
    check(status === 204, "POST /apps/vcc/session sets the container session cookie (top-level on the API)");
  };

  const messages = (page) => page.evaluate(() => window.__messages);
  const waitForMessage = (page, predicate, what, timeout = 15_000) =>
    page.waitForFunction(`(${predicate})(window.__messages)`, null, { timeout, polling: 100 }).catch(async () => {
      throw new Error(`${what}: no such message; got ${JSON.stringify(await messages(page))}`);
    });
  const trusts = (message) => Object.fromEntries(message.container.vendors.map((v) => [v.slug, v.trust]));

  // 1. Default cookie settings: signed-in visitor through the frame.
  {
    const context = await launch("default");
    const page = context.pages()[0] ?? (await context.newPage());
    await signIn(page, "pk_demo_alice");

    await page.goto(`${PUBLISHER}/`);
    const plain = await page.evaluate(async (api) => {
      const r = await fetch(`${api}/apps/vcc/load_container/dailynews`, { credentials: "include" });
      return (await r.json()).is_authenticated;
    }, API);
    log(`    (default settings: the plain credentialed fetch from the publisher is signed in: ${plain})`);

    // Before the storage-access step the browser withholds the cookie: the frame offers its button.
    const frame = page.frameLocator("#vcc");
    await waitForMessage(page, "(m) => m.length > 0", "the frame posts the container to the publisher");
    check(
      (await messages(page))[0].container.is_authenticated === false,
      "default settings: before storage access the frame is anonymous too (cookie withheld)",
    );
    await frame
      .locator("#access")
      .waitFor({ state: "visible", timeout: 5_000 })
      .catch(() => undefined);
    check(await frame.locator("#access").isVisible(), "the frame offers the storage-access button");
    await page.screenshot({ path: path.join(shots, "1-before-storage-access.png") });

    // The storage-access step: the visitor's consent, granted here through CDP for (publisher, API)
    // (the recipe that works under automation: a persistent profile), then the click on the frame's button.
    const cdp = await context.newCDPSession(page);
    for (const [origin, embeddedOrigin] of [
      [PUBLISHER, API],
      [API, PUBLISHER],
    ]) {
      await cdp.send("Browser.setPermission", {
        permission: { name: "storage-access" },
        setting: "granted",
        origin,
        embeddedOrigin,
      });
    }
    await frame.locator("#access").click();
    await waitForMessage(page, "(m) => m.some((x) => x.container.is_authenticated)", "signed in after storage access");
    let last = (await messages(page)).at(-1);
    check(
      last.type === "vcc:container" && last.container.is_authenticated,
      "the frame recognises the signed-in visitor",
    );
    check(
      JSON.stringify(trusts(last)) ===
        JSON.stringify({ admetrics: "trusted", trackbuddy: "negative", pixelpartners: null }),
      `the visitor sees their vendor trust ${JSON.stringify(trusts(last))}`,
    );
    await page.screenshot({ path: path.join(shots, "2-signed-in.png") });

    await frame.locator('li[data-vendor="pixelpartners"] select').selectOption("trusted");
    await waitForMessage(
      page,
      '(m) => m.some((x) => x.container.vendors.some((v) => v.slug === "pixelpartners" && v.trust === "trusted"))',
      "the change is posted",
    );
    check(
      (await frame.locator('li[data-vendor="pixelpartners"]').getAttribute("data-trust")) === "trusted",
      "the visitor changes a vendor's trust in the frame and sees the change",
    );
    await page.screenshot({ path: path.join(shots, "3-changed.png") });

    // 3. Another origin: the frame may not be embedded (frame-ancestors), no message, no CORS grant.
    await page.goto(`${EVIL}/`);
    await page.waitForTimeout(1_500);
    check((await messages(page)).length === 0, "a page on another origin gets no postMessage");
    const evilFetch = await page.evaluate(async (api) => {
      try {
        await fetch(`${api}/apps/vcc/load_container/dailynews`, { credentials: "include" });
        return "read";
      } catch {
        return "blocked";
      }
    }, API);
    check(evilFetch === "blocked", "a page on another origin gets no CORS grant (its fetch fails)");
    const evilPut = await page.evaluate(async (api) => {
      try {
        await fetch(`${api}/apps/vcc/trust/dailynews/admetrics`, {
          method: "PUT",
          credentials: "include",
          headers: { "Content-Type": "application/json" },
          body: JSON.stringify({ trust: "negative" }),
        });
        return "sent";
      } catch {
        return "blocked";
      }
    }, API);
    check(evilPut === "blocked", "a page on another origin cannot set vendor trust (preflight refused)");
    await page.screenshot({ path: path.join(shots, "4-other-origin.png") });
    await context.close();
  }

  // 2. Anonymous visitor.
  {
    const context = await launch("anonymous");
    const page = context.pages()[0] ?? (await context.newPage());
    await page.goto(`${PUBLISHER}/`);
    await waitForMessage(page, "(m) => m.length > 0", "the frame posts the container to an anonymous visitor");
    const first = (await messages(page))[0];
    check(
      first.container.is_authenticated === false && first.container.vendors.every((v) => v.trust === null),
      "an anonymous visitor gets is_authenticated false and no trust",
    );
    await page.screenshot({ path: path.join(shots, "5-anonymous.png") });
    await context.close();
  }

  // 4. A profile that allows third-party cookies: the plain credentialed fetch works.
  {
    const context = await launch("third-party-cookies", { profile: { cookie_controls_mode: 0 } });
    const page = context.pages()[0] ?? (await context.newPage());
    await signIn(page, "pk_demo_bob");
    await page.goto(`${PUBLISHER}/`);
    const result = await page.evaluate(async (api) => {
      const load = await fetch(`${api}/apps/vcc/load_container/dailynews`, { credentials: "include" });
      const put = await fetch(`${api}/apps/vcc/trust/dailynews/trackbuddy`, {
        method: "PUT",
        credentials: "include",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ trust: "trusted" }),
      });
      const again = await fetch(`${api}/apps/vcc/load_container/dailynews`, { credentials: "include" });
      return { first: await load.json(), put: put.status, again: await again.json() };
    }, API);
    check(
      result.first.is_authenticated === true,
      "third-party cookies allowed: the plain credentialed fetch is signed in",
    );
    check(
      result.put === 200 && result.again.vendors.find((v) => v.slug === "trackbuddy").trust === "trusted",
      "third-party cookies allowed: vendor trust set by a credentialed CORS PUT (preflight granted)",
    );
    await page.screenshot({ path: path.join(shots, "6-third-party-cookies.png") });
    await context.close();
  }
}

/* ---------- the servers ---------- */

function makeCertificate(hosts) {
  const key = path.join(tmp, "key.pem");
  const cert = path.join(tmp, "cert.pem");
  const result = spawnSync(
    "openssl",
    [
      "req",
      "-x509",
      "-newkey",
      "rsa:2048",
      "-nodes",
      "-keyout",
      key,
      "-out",
      cert,
      "-days",
      "1",
      "-subj",
      "/CN=vcc browser test",
      "-addext",
      `subjectAltName=${hosts.map((h) => `DNS:${h}`).join(",")}`,
    ],
    { stdio: ["ignore", "ignore", "pipe"] },
  );
  if (result.status !== 0) throw new Error(`openssl failed: ${result.stderr}`);
  return { key, cert };
}

function startChild(name, command, args) {
  const out = path.join(tmp, `${name}.log`);
  const child = spawn(command, args, {
    cwd: ROOT,
    env: childEnv({ CI: "1" }),
    detached: true,
    stdio: ["ignore", "pipe", "pipe"],
  });
  const chunks = [];
  child.stdout.on("data", (d) => chunks.push(d));
  child.stderr.on("data", (d) => chunks.push(d));
  child.on("exit", () => writeFileSync(out, Buffer.concat(chunks)));
  children.push({ name, pid: child.pid, child, chunks });
  return child;
}

function runStep(what, command, args) {
  const result = spawnSync(command, args, { cwd: ROOT, env: childEnv({ CI: "1" }), encoding: "utf8" });
  if (result.status !== 0) throw new Error(`${what} failed:\n${result.stdout}\n${result.stderr}`);
}

async function startWorker({ key, cert, apiPort, inspectorPort }) {
  const state = path.join(tmp, "state");
  log("migrating and seeding a fresh local D1");
  runStep("migrations", bin("wrangler"), ["d1", "migrations", "apply", "DB", "--local", "--persist-to", state]);
  runStep("demo world", bin("tsx"), ["scripts/seed.ts", "--persist-to", state]);
  log(`starting wrangler dev on https://127.0.0.1:${apiPort}`);
  const child = startChild("wrangler", bin("wrangler"), [
    "dev",
    "--ip",
    "127.0.0.1",
    "--port",
    String(apiPort),
    "--inspector-port",
    String(inspectorPort),
    "--local-protocol",
    "https",
    "--https-key-path",
    key,
    "--https-cert-path",
    cert,
    "--persist-to",
    state,
    "--show-interactive-dev-session=false",
  ]);
  const until = Date.now() + 60_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`wrangler dev exited:\n${Buffer.concat(children.at(-1).chunks)}`);
    if ((await get(`https://127.0.0.1:${apiPort}/healthz`).catch(() => 0)) === 200) break;
    if (Date.now() > until) throw new Error("wrangler dev did not answer /healthz within 60 s");
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  await loadDemoObjects(`https://127.0.0.1:${apiPort}`, put);
  log("worker ready");
}

/** A PUT that accepts the test's self-signed certificate: `{ status, text }`. */
function put(url, headers, body) {
  return new Promise((resolve, reject) => {
    const req = https.request(url, { method: "PUT", headers, rejectUnauthorized: false, timeout: 5_000 }, (res) => {
      const chunks = [];
      res.on("data", (chunk) => chunks.push(chunk));
      res.on("end", () => resolve({ status: res.statusCode, text: Buffer.concat(chunks).toString() }));
    });
    req.on("error", reject);
    req.on("timeout", () => req.destroy(new Error("timeout")));
    req.end(body);
  });
}

function get(url) {
  return new Promise((resolve, reject) => {
    const req = https.get(url, { rejectUnauthorized: false, timeout: 2_000 }, (res) => {
      res.resume();
      resolve(res.statusCode);
    });
    req.on("error", reject);
    req.on("timeout", () => req.destroy(new Error("timeout")));
  });
}

/** The publisher's page (and, on evil.example, another site's copy of it) embedding the frame. */
function publisherPage(api) {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Daily News</title>
<style>body{font:15px system-ui,sans-serif;margin:24px}iframe{border:1px solid #ccc;width:460px;height:300px}</style></head>
<body><h1>Daily News</h1><p>Publisher page on <b id="origin"></b>. Last message: <code id="state">none</code></p>
<iframe id="vcc" src="${api}/apps/vcc/frame/dailynews" title="Privacy choices"></iframe>
<script>
document.getElementById("origin").textContent = location.origin;
window.__messages = [];
addEventListener("message", (event) => {
  if (event.origin !== ${JSON.stringify(api)} || event.data?.type !== "vcc:container") return;
  window.__messages.push(event.data);
  const c = event.data.container;
  document.getElementById("state").textContent =
    "is_authenticated=" + c.is_authenticated + " " + c.vendors.map((v) => v.slug + ":" + v.trust).join(", ");
});
</script></body></html>`;
}

async function startPublisher({ key, cert, pubPort, API }) {
  const server = https.createServer({ key: readFileSync(key), cert: readFileSync(cert) }, (req, res) => {
    if (req.url === "/" || req.url?.startsWith("/?")) {
      res.writeHead(200, { "Content-Type": "text/html; charset=utf-8", "Cache-Control": "no-store" });
      res.end(publisherPage(API));
    } else {
      res.writeHead(404, { "Content-Type": "text/plain" });
      res.end("not found");
    }
  });
  await new Promise((resolve) => server.listen(pubPort, "127.0.0.1", resolve));
  closers.push(() => new Promise((resolve) => server.close(resolve)));
  log(`publisher pages on https://127.0.0.1:${pubPort}`);
}

async function stopAll() {
  for (const close of closers.splice(0).reverse()) await Promise.resolve(close()).catch(() => undefined);
  for (const { name, pid, child } of children.splice(0)) {
    if (child.exitCode !== null) continue;
    try {
      process.kill(-pid, "SIGTERM"); // the process group we started: wrangler and its workerd
    } catch {
      continue;
    }
    const exited = await Promise.race([
      new Promise((resolve) => child.once("exit", () => resolve(true))),
      new Promise((resolve) => setTimeout(() => resolve(false), 5_000)),
    ]);
    if (!exited) {
      try {
        process.kill(-pid, "SIGKILL");
      } catch {}
    }
    log(`stopped ${name} (pid ${pid})`);
  }
}
