/**
 * Lints the OpenAPI document the Worker serves at /openapi.json with Redocly's
 * recommended ruleset (redocly.yaml). The document is generated here exactly
 * as the app does (`createApp()` + the same top level), written to a temporary
 * directory with the config and its ignore file (.redocly.lint-ignore.yaml: the
 * problems knowingly accepted, each with its reason) and handed to the
 * `redocly` CLI, which cannot run inside workerd. Exits non-zero on any
 * error (Redocly's own rule); warnings are printed. Part of `npm test`.
 */
import { spawnSync } from "node:child_process";
import { copyFileSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { createApp } from "../src/app";
import { DOCUMENT } from "../src/lib/openapi";

const root = path.resolve(import.meta.dirname, "..");
const dir = mkdtempSync(path.join(tmpdir(), "openapi-lint-"));
const file = path.join(dir, "openapi.json");
try {
  writeFileSync(file, JSON.stringify(createApp().getOpenAPI31Document(DOCUMENT), null, 2));
  for (const name of ["redocly.yaml", ".redocly.lint-ignore.yaml"])
    copyFileSync(path.join(root, name), path.join(dir, name));
  const result = spawnSync(
    path.join(root, "node_modules/.bin/redocly"),
    ["lint", "openapi.json", "--max-problems", "200", "--format", "codeframe"],
    {
      cwd: dir,
      stdio: "inherit",
      env: { ...process.env, REDOCLY_TELEMETRY: "off", REDOCLY_SUPPRESS_UPDATE_NOTICE: "true", NO_COLOR: "1" },
    },
  );
  process.exitCode = result.status ?? 1;
} finally {
  rmSync(dir, { recursive: true, force: true });
}
