import { applyD1Migrations } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { createDb } from "../src/db/client";
import { DEMO, loadDemoWorld } from "../src/db/demo-world";
import { sha256Hex } from "../src/lib/crypto";
import { fileTokens, type Who } from "./principals";

// Setup files run before each test file; both steps are idempotent, so the
// demo world (README) is there for every test file.
await applyD1Migrations(env.DB, env.TEST_MIGRATIONS);
await loadDemoWorld(createDb(env.DB));

// A copy of each demo token for this file (see test/principals.ts).
const suffix = crypto.randomUUID().replaceAll("-", "");
await env.DB.batch(
  await Promise.all(
    (Object.keys(DEMO.tokens) as Who[]).map(async (who) => {
      const token = `${DEMO.tokens[who]}_${suffix}`;
      fileTokens[who] = token;
      return env.DB.prepare(
        `INSERT INTO access_tokens (token_hash, prefix, person_id, service_name, scopes, created_at)
         SELECT ?1, ?2, person_id, service_name, scopes, created_at FROM access_tokens WHERE token_hash = ?3`,
      ).bind(await sha256Hex(token), token.slice(0, 8), await sha256Hex(DEMO.tokens[who]));
    }),
  ),
);
