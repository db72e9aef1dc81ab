import { applyD1Migrations } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { createDb } from "../src/db/client";
import { DEMO, loadDemoObjects, loadDemoWorld } from "../src/fixtures/demo-world";
import { rebuildNow } from "../src/services/index-rebuild";
import { createDeps } from "../src/services/create-deps";
import { personObjectsOf } from "../src/services/person-objects";
import { sha256Hex } from "../src/lib/crypto";
import { fileTokens, type Who } from "./principals";

// Setup files run before each test file; both steps are idempotent, so the
// demo world (README) is there for every test file.
await applyD1Migrations(env.DB, env.TEST_MIGRATIONS);
await loadDemoWorld(createDb(env.DB));
await loadDemoObjects(personObjectsOf(env.PERSON));
// The trust index is built and marked complete, as `npm run dev` leaves it (docs/architecture.md).
await rebuildNow(createDeps(env));

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

// Tests never reach the network (this machine has none): outbound requests
// other than to loopback fail at once, like an unreachable host, instead of
// waiting on a DNS lookup. Tests that expect a receiver stub fetch on top of
// this (`receiver()` in test/webhook-receiver.ts); `vi.restoreAllMocks()`
// restores this guard, not the network.
const networkFetch = globalThis.fetch;
globalThis.fetch = (input: RequestInfo | URL, init?: RequestInit) => {
  const url = new URL(input instanceof Request ? input.url : String(input));
  if (url.hostname === "127.0.0.1" || url.hostname === "localhost" || url.hostname === "[::1]") {
    return networkFetch(input, init);
  }
  return Promise.reject(new TypeError(`Network connection lost: tests make no request to ${url.hostname}`));
};
