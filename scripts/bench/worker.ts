// The bench's own entry point: the Worker of src/index.ts, plus routes that do
// only the storage rounds an endpoint cannot avoid (the "floors" of
// docs/performance.md). Only `npm run bench` bundles it (scripts/bench.mjs passes
// it to scripts/lib/local-worker.mjs); wrangler.toml's `main` stays
// src/index.ts, so these routes are never deployed.
//
// Each floor route sits behind the same middleware as every route (request
// id, body limit, D1 session, token identification with its caches, the rate
// limit) and asks for a token the way the real routes do, then makes its
// storage rounds and answers a fixed small JSON body:
//   /__bench/floor/kv         one KV bulk get of a trust lookup's three keys
//   /__bench/floor/d1         one D1 query (the company row by primary key)
//   /__bench/floor/object     one RPC call to the caller's Person object
//   /__bench/floor/kv-d1      the KV bulk get, then the D1 query (call-lookup's rounds)
//   /__bench/floor/d1-object  the D1 query and the object call together (heartbeat's)
//   /__bench/floor/object-d1  the object call, then the D1 query (a contacts page's rounds)
//   /__bench/floor/kv-blocked the KV bulk get, then, after the answer, a blocked call appended
//                             to the receiver's object (an untrusted lookup's storage)
//   /__bench/floor/object-kv  the object call, then one KV bulk get of two keys (the heartbeat's
//                             rounds: the caller's object, then the `co:` records and their mark;
//                             also issue 37's floor for the contacts page of 100: one object RPC
//                             and one KV read)
import { eq } from "drizzle-orm";
import type { Context } from "hono";
import { createApp } from "../../src/app";
import { handleScheduled } from "../../src/cron/scheduled";
import { companies } from "../../src/db/schema";
import { requireAuth } from "../../src/middleware/auth";
import { handleQueue } from "../../src/queue/consumer";
import { rebuildNow } from "../../src/services/index-rebuild";
import { recordBlockedCall } from "../../src/services/blocked-calls";
import { bucketOf, contactBucketKey, numberKey, receiverKey } from "../../src/domain/trust-records";
import { COMPANIES_COMPLETE_KEY, companyKey } from "../../src/domain/company-records";
import type { AppEnv } from "../../src/types";

const app = createApp();

/** The same guard as the ringing path's routes: a person token, or a service token with `calls:lookup`. */
const caller = requireAuth({ person: true, scope: "calls:lookup" });

/** `?number=+1…&inbound=+1…` (E.164): the keys a trust lookup for that call reads. */
function lookupKeys(c: Context<AppEnv>): string[] {
  const receiving = c.req.query("number") ?? "";
  const calling = c.req.query("inbound") ?? "";
  return [receiverKey(receiving), numberKey(calling), contactBucketKey(receiving, bucketOf(calling))];
}

const kvRound = (c: Context<AppEnv>) => c.var.deps.kv.get(lookupKeys(c), "text");
const d1Round = (c: Context<AppEnv>) =>
  c.var.deps.db.select({ id: companies.id, name: companies.name }).from(companies).where(eq(companies.id, 1)).get();
const objectRound = (c: Context<AppEnv>) => {
  const principal = c.var.principal;
  return c.var.deps.objects.of(principal?.kind === "person" ? principal.personId : 1).lastActivityId();
};

const ok = (c: Context<AppEnv>) => c.json({ ok: true });

// The trust index built and marked complete, as `npm run dev` leaves it (the minute cron's rebuild).
app.post("/__bench/rebuild-index", caller, async (c) => {
  await rebuildNow(c.var.deps);
  return ok(c);
});

app.get("/__bench/floor/kv", caller, async (c) => {
  await kvRound(c);
  return ok(c);
});
app.get("/__bench/floor/d1", caller, async (c) => {
  await d1Round(c);
  return ok(c);
});
app.get("/__bench/floor/object", caller, async (c) => {
  await objectRound(c);
  return ok(c);
});
app.get("/__bench/floor/kv-d1", caller, async (c) => {
  await kvRound(c);
  await d1Round(c);
  return ok(c);
});
app.get("/__bench/floor/d1-object", caller, async (c) => {
  await Promise.all([d1Round(c), objectRound(c)]);
  return ok(c);
});
app.get("/__bench/floor/object-d1", caller, async (c) => {
  await objectRound(c);
  await d1Round(c);
  return ok(c);
});
app.get("/__bench/floor/object-kv", caller, async (c) => {
  await objectRound(c);
  await c.var.deps.kv.get([companyKey(1), COMPANIES_COMPLETE_KEY], "json");
  return ok(c);
});
app.get("/__bench/floor/kv-blocked", caller, async (c) => {
  await kvRound(c);
  const call = { personId: 1, callerId: null, countryCode: "1", phoneNumber: "3035550142" };
  c.executionCtx.waitUntil(recordBlockedCall(c.var.deps.objects, call));
  return ok(c);
});

const worker: ExportedHandler<Env> = { fetch: app.fetch, queue: handleQueue, scheduled: handleScheduled };

export default worker;
export { Company } from "../../src/objects/company/company";
export { Person } from "../../src/objects/person/person";
export { ReplayGuard } from "../../src/objects/replay-guard/replay-guard";
