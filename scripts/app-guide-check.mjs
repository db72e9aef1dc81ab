// `npm run test:app-guide [-- --api <url>]`: runs the ```sh blocks of docs/app.md, the app
// developer's guide, in order and in one bash (so a variable one block sets serves the next), as
// written except that `API=` points at the server under test; then checks every `# → …` line of
// a block against what that block printed (`…` stands for anything). It fails on a block that
// exits non-zero or a `# →` line no output line matches. A block opened with ```sh and a word
// after it (```sh not-checked: a second terminal, a deployment's secrets) is not run. Without --api it starts `npm run dev`
// on a free port and stops it by its PID at the end. Reruns are fine: the code requests an
// earlier run counted for the guide's addresses are deleted from the local D1 first, and Bob's
// contacts are cleared (a development-only route), so the guide's figures hold.
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import {
  ROOT,
  childEnv,
  d1,
  fail,
  freePorts,
  parseArgs,
  sqlString,
  startDevServer,
  step,
  stopServer,
} from "./lib/cli.mjs";

const { flags } = parseArgs(process.argv.slice(2), { switches: ["help"], options: ["api"] });
if (flags.help) {
  console.error("Usage: node scripts/app-guide-check.mjs [--api <url of a local npm run dev server>]");
  process.exit(0);
}
const started = Date.now();
const GUIDE = "docs/app.md";
/** The person whose contacts the guide lists (README, "The demo world"). */
const BOB = "pk_demo_bob";
const MARK = "@@app-guide block";

const blocks = guideBlocks();
const addresses = [
  ...new Set(
    blocks.flatMap(({ code }) =>
      [...code.matchAll(/"(?:email|phone)": "([^"]+)"|outbox --to (\S+)/g)].map((m) => (m[1] ?? m[2]).toLowerCase()),
    ),
  ),
];

let server = null;
let api = flags.api ? String(flags.api).replace(/\/+$/, "") : null;
process.on("exit", () => {
  // `fail()` exits at once: never leave the server behind.
  if (server?.exitCode === null) {
    try {
      process.kill(-server.pid, "SIGTERM");
    } catch {
      // already gone
    }
  }
});
try {
  if (!api) {
    const [port] = await freePorts();
    step(`Starting npm run dev on http://127.0.0.1:${port}`);
    let ready;
    ({ server, api, ready } = await startDevServer(port));
    await ready;
  }

  step(`Clearing what earlier runs left: code requests to ${addresses.join(", ")}; Bob's contacts`);
  d1(`DELETE FROM one_time_codes WHERE address IN (${addresses.map(sqlString).join(", ")})`);
  const cleared = await fetch(`${api}/contacts/clear`, {
    method: "DELETE",
    headers: { Authorization: `Bearer ${BOB}` },
  });
  if (cleared.status !== 204) throw new Error(`DELETE /contacts/clear as Bob answered ${cleared.status}`);

  step(`Running the ${blocks.length} sh blocks of ${GUIDE} against ${api}`);
  const script = [
    "set -euo pipefail",
    // The marker starts a line of its own: curl's answers end without a newline.
    ...blocks.map(({ code }, i) => `printf '\\n%s\\n' '${MARK} ${i}'\n${code.replace(/^API=\S+/gm, `API=${api}`)}`),
  ].join("\n");
  // No ADMIN_TOKEN: `npm run admin -- outbox` must read the local database, not ask a server on 8787.
  const { ADMIN_TOKEN: _ignored, ...env } = childEnv();
  const result = spawnSync("bash", ["-c", script], { cwd: ROOT, env, encoding: "utf8", timeout: 240_000 });
  const outputs = splitOutputs(result.stdout ?? "");
  const problems = [];
  blocks.forEach((block, i) => {
    const output = outputs[i];
    if (output === undefined) return;
    process.stdout.write(`\n── ${block.section}\n${output.replace(/\n?$/, "\n")}`);
    for (const expected of block.expectations) {
      if (!output.split("\n").some((line) => expected.pattern.test(line))) {
        problems.push(`${block.section}: no line of its output is like \`${expected.text}\``);
      }
    }
  });
  process.stderr.write(result.stderr ?? "");
  if (result.status !== 0) {
    const stopped = blocks[outputs.length - 1];
    problems.unshift(
      `the block of "${stopped?.section ?? "?"}" failed (${result.error?.message ?? `bash exited ${result.status}`}); see above`,
    );
  }
  if (problems.length) throw new Error(problems.join("\n  "));
  const checked = blocks.reduce((n, block) => n + block.expectations.length, 0);
  step(
    `The guide's ${blocks.length} blocks ran and ${checked} expected lines matched, in ${Math.round((Date.now() - started) / 1000)} s`,
  );
} catch (err) {
  process.stderr.write(`\n✖ ${err.message}\n`);
  process.exitCode = 1;
} finally {
  if (server) await stopServer(server);
}

/**
 * The guide's ```sh blocks in order, each with the `##` section it is in and its `# → …` lines
 * as patterns: the text literally, `…` matching anything.
 */
function guideBlocks() {
  const text = fs.readFileSync(path.join(ROOT, GUIDE), "utf8");
  const found = [];
  let section = "(top)";
  for (const match of text.matchAll(/^## (.+)$|^```sh\n([\s\S]*?)^```$/gm)) {
    if (match[1]) {
      section = match[1];
      continue;
    }
    const code = match[2];
    const expectations = [...code.matchAll(/^\s*# → (.*)$/gm)].map(([, expected]) => ({
      text: expected,
      pattern: new RegExp(expected.split("…").map(escapeRegExp).join(".*")),
    }));
    found.push({ section, code, expectations });
  }
  if (found.length === 0) fail(`${GUIDE} has no \`\`\`sh blocks.`);
  const skipped = text.match(/^```sh \S.*$/gm) ?? [];
  if (skipped.length) step(`Not running ${skipped.length} blocks marked as such (${[...new Set(skipped)].join(", ")})`);
  if (!/^API=/m.test(found[0].code)) fail(`${GUIDE}'s first sh block does not set API=: has it changed?`);
  return found;
}

/** What each block printed, by the marker echoed before it (as many as ran). */
function splitOutputs(stdout) {
  return stdout.split(new RegExp(`\\n${MARK} \\d+\\n`)).slice(1);
}

function escapeRegExp(text) {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}
