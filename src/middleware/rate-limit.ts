import type { Context } from "hono";
import { createMiddleware } from "hono/factory";
import { clientNetwork } from "../lib/client-network";
import { errorBody, tooManyRequests } from "../lib/errors";
import type { AppEnv, LookupCharge } from "../types";
import { isProviderWebhook, readsOnly } from "./request-kind";

/** Every limit uses a 60 s window (wrangler.toml), so that is the longest wait. */
const WINDOW_SECONDS = 60;

/**
 * Rate limits (README "Rate limits"), counted by the Workers rate-limiting
 * binding (https://developers.cloudflare.com/workers/runtime-apis/bindings/rate-limit/):
 * - service tokens: their own budget (600,000 / 60 s: 10,000 lookups a second,
 *   docs/capacity.md's provider figure), sized for a telephony provider's whole
 *   call volume; on the ringing path each receiving number has its share of it
 *   (`RECEIVER_SHARE`, `chargeLookup`);
 * - person tokens: 1,000 / 60 s each;
 * - requests without a valid token: 300 / 60 s per client IP (IP_RATE_LIMIT),
 *   also charged by `identify` before an uncached token is looked up in D1; but not a provider
 *   webhook's request without credentials (`isChallenge`).
 * Token budgets are counted by sampling (`admit`). A refused request is a 429
 * with Retry-After, never a silent answer. Runs after `identify`, so a valid
 * token is counted against its own budget.
 */
export const rateLimit = createMiddleware<AppEnv>(async (c, next) => {
  // Health checks come from load balancers and must never be throttled.
  if (c.req.path === "/healthz") return next();
  const principal = c.var.principal;
  if (!principal) {
    // Already charged while identifying a token that turned out unknown.
    if (!c.var.ipCharged && !isChallenge(c)) await limitByIp(c);
    return next();
  }
  const budget = principal.kind === "service" ? SERVICE_BUDGET : PERSON_BUDGET;
  const limiter = principal.kind === "service" ? c.env.SERVICE_RATE_LIMIT : c.env.TOKEN_RATE_LIMIT;
  const ringing = principal.kind === "service" && isProviderWebhook(c.req.path);
  // The ringing path with a service token is charged once its handler knows the receiving number
  // (`chargeLookup`); a request whose handler never asks (a 400, a 403) is charged to the token alone.
  let lookupCharge: Promise<LookupCharge> | null = null;
  const tokenId = principal.tokenId;
  const admission = ringing
    ? new Promise<boolean>((resolve) => {
        c.set("chargeLookup", (receiver) => {
          lookupCharge ??= chargeLookup(c.env, tokenId, receiver);
          void lookupCharge.then(({ admitted }) => resolve(admitted));
          return lookupCharge;
        });
      })
    : admit(limiter, budget, tokenId);
  c.set("admitted", admission);
  const settled = () => (ringing ? (c.var.chargeLookup?.(null) ?? admission) : admission).then(() => admission);
  const refused = () =>
    tooManyRequests(
      `this token made more than ${budget.perMinute} requests in the last minute; retry after the Retry-After delay`,
      WINDOW_SECONDS,
    );
  if (!readsOnly(c)) {
    if (!(await settled())) throw refused();
    await next();
  } else {
    // A read (and the ringing path, a question) does its work while its budget is checked: one
    // round of I/O less. A refused read's answer is replaced by the 429; it changed nothing.
    await next();
    if (!(await settled())) {
      const error = refused();
      // A new answer: of the replaced one's headers only CORS's stay (hono's setter would copy them all,
      // and `Lookup-Problem`, an ETag or a total describe an answer not given). `X-Request-Id` and `Date`
      // are set again by their middleware.
      const headers = new Headers({ "Content-Type": "application/json", ...error.headers });
      for (const [name, value] of c.res.headers) if (/^(access-control-|vary$)/i.test(name)) headers.set(name, value);
      c.res = undefined;
      c.res = new Response(JSON.stringify(errorBody(429, error.detail)), { status: 429, headers });
      return;
    }
  }
  if (c.res.status < 400) setRateLimitHeaders(c.res.headers, budget, principal.tokenId);
});

/**
 * The IETF RateLimit fields (draft-ietf-httpapi-ratelimit-headers) on a
 * success: the token's policy (`q` requests per `w` seconds) and what is
 * left of it (`r`) until the window ends (`t` seconds). `r` is what this
 * isolate counted in the current window: other isolates serving the same
 * token may have spent part of it (docs/decisions.md, "Rate limits").
 */
function setRateLimitHeaders(headers: Headers, budget: Budget, tokenId: number) {
  const now = Date.now();
  const used = budget.state.used.get(tokenId);
  const spent = used && used.window === windowOf(now) ? used.count : 0;
  const reset = Math.ceil(((windowOf(now) + 1) * WINDOW_SECONDS * 1000 - now) / 1000);
  try {
    headers.set("RateLimit-Policy", `"${budget.name}";q=${budget.perMinute};w=${WINDOW_SECONDS}`);
    headers.set("RateLimit", `"${budget.name}";r=${Math.max(0, budget.perMinute - spent)};t=${reset}`);
  } catch {
    // An immutable answer (none today) goes without them.
  }
}

const windowOf = (ms: number) => Math.floor(ms / (WINDOW_SECONDS * 1000));

/**
 * A token budget and how it is sampled: each isolate asks the binding for
 * one request in `sample` of a token (its first, then every `sample`th),
 * against a binding limit of `perMinute / sample` (wrangler.toml). A busy
 * token thus costs one binding call in `sample` instead of one per request.
 * In one isolate the count is exact (the binding refuses the sampled request
 * that brings it past the budget, and the isolate refuses the token until
 * the window ends); across isolates each may admit up to `sample - 1`
 * requests more, and an isolate's first request always counts, so the
 * budget is never lenient at low volume.
 */
type Budget = { name: string; perMinute: number; sample: number; state: SampleState };
/** `used`: requests per token in the current window, for the RateLimit header. */
type SampleState = {
  seen: Map<number | string, number>;
  refusedUntil: Map<number | string, number>;
  used: Map<number | string, { window: number; count: number }>;
};
const sampleState = (): SampleState => ({ seen: new Map(), refusedUntil: new Map(), used: new Map() });

/**
 * Binding limits in wrangler.toml: SERVICE_RATE_LIMIT 75,000 (600,000 / 8), RECEIVER_RATE_LIMIT 150
 * (1,200 / 8), TOKEN_RATE_LIMIT 125 (1,000 / 8).
 */
const SERVICE_BUDGET: Budget = { name: "service", perMinute: 600_000, sample: 8, state: sampleState() };
/**
 * Each receiving number's share of its provider token's budget (docs/decisions.md, "Rate limits"):
 * 1,200 lookups a minute, 20 calls a second for one number, more than a busy call centre's line
 * receives. A number past it still gets its decisions, but they no longer spend the token's budget
 * and its blocked calls are counted, not listed (services/blocked-calls.ts `recordBlockedCall`), so
 * one number's burst never brings a 429 to the others (docs/security.md, "What a stranger can cost").
 */
const RECEIVER_SHARE: Budget = { name: "receiver", perMinute: 1_200, sample: 8, state: sampleState() };

/**
 * Charges one ringing-path lookup of service token `tokenId` to `receiver`'s share (its E.164, null when
 * unreadable: the token alone is charged), then, only within the share, to the token's budget. A lookup
 * past its number's share is answered (one KV read) and spends nothing of the token's budget.
 */
async function chargeLookup(env: Env, tokenId: number, receiver: string | null): Promise<LookupCharge> {
  if ((SERVICE_BUDGET.state.refusedUntil.get(tokenId) ?? 0) > Date.now()) return { admitted: false, withinShare: true };
  if (receiver !== null) {
    const share = await admit(env.RECEIVER_RATE_LIMIT, RECEIVER_SHARE, `${tokenId}:${receiver}`);
    if (!share) return { admitted: true, withinShare: false };
  }
  return { admitted: await admit(env.SERVICE_RATE_LIMIT, SERVICE_BUDGET, tokenId), withinShare: true };
}
const PERSON_BUDGET: Budget = { name: "person", perMinute: 1_000, sample: 8, state: sampleState() };
/** Entries kept per budget; a full map starts over (an isolate rarely sees this many tokens a minute). */
const MAX_TRACKED_TOKENS = 10_000;

async function admit(limiter: RateLimit, { sample, state }: Budget, tokenId: number | string): Promise<boolean> {
  const now = Date.now();
  if ((state.refusedUntil.get(tokenId) ?? 0) > now) return false;
  if (state.seen.size >= MAX_TRACKED_TOKENS) state.seen.clear();
  if (state.refusedUntil.size >= MAX_TRACKED_TOKENS) state.refusedUntil.clear();
  if (state.used.size >= MAX_TRACKED_TOKENS) state.used.clear();
  const used = state.used.get(tokenId);
  if (used && used.window === windowOf(now)) used.count++;
  else state.used.set(tokenId, { window: windowOf(now), count: 1 });
  const seen = state.seen.get(tokenId) ?? 0;
  state.seen.set(tokenId, seen + 1);
  if (seen % sample !== 0) return true;
  const { success } = await limiter.limit({ key: `token:${tokenId}` });
  if (!success) state.refusedUntil.set(tokenId, now - (now % (WINDOW_SECONDS * 1000)) + WINDOW_SECONDS * 1000);
  return success;
}

/**
 * A provider webhook's request with no credentials at all: answered its 401 challenge, which reads
 * nothing, without spending the address's budget. Twilio sends the first request of every call so and
 * sends the voice URL's credentials only after the challenge (docs/providers.md, "The token"), from
 * addresses the deployment's calls share: charged, the 301st call a minute from one of them got a 429
 * instead of the challenge, and went to the provider's fallback.
 */
const isChallenge = (c: Context<AppEnv>) =>
  c.req.header("Authorization") === undefined && isProviderWebhook(c.req.path);

/** The budget a client address spends: its network (lib/client-network.ts), an IPv6 client's /64. */
export const ipBudgetKey = (address: string | undefined) => `ip:${clientNetwork(address)}`;

/** Charges one request to the client address's budget (`ipBudgetKey`); 429 when it is spent. */
export async function limitByIp(c: Context<AppEnv>) {
  c.set("ipCharged", true);
  const { success } = await c.env.IP_RATE_LIMIT.limit({ key: ipBudgetKey(c.req.header("CF-Connecting-IP")) });
  if (!success) {
    throw tooManyRequests(
      "this address made more than 300 requests without a valid token in the last minute; retry after the Retry-After delay",
      WINDOW_SECONDS,
    );
  }
}
