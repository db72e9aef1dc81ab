import { applyD1Migrations } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { createDb } from "../src/db/client";
import { loadDemoWorld } from "../src/db/demo-world";

// Setup files run before each test file; both steps are idempotent, so the
// demo world of DECISIONS §9 is there for every test file.
await applyD1Migrations(env.DB, env.TEST_MIGRATIONS);
await loadDemoWorld(createDb(env.DB));
