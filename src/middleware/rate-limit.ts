import type { Context } from "hono";
import { createMiddleware } from "hono/factory";
import { errorBody, tooManyRequests } from "../lib/errors";
import type { AppEnv } from "../types";
import { readsOnly } from "./request-kind";

/** Every limit uses a 60 s window (wrangler.toml), so that is the longest wait. */
const WINDOW_SECONDS = 60;

/**
 * Rate limits (README "Rate limits"), counted by the Workers rate-limiting
 * binding (https://developers.cloudflare.com/workers/runtime-apis/bindings/rate-limit/):
 * - service tokens: their own budget (60,000 / 60 s), sized for a telephony
 *   provider's whole call volume;
 * - person tokens: 1,000 / 60 s each;
 * - requests without a valid token: 300 / 60 s per client IP (IP_RATE_LIMIT),
 *   also charged by `identify` before an uncached token is looked up in D1.
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
    if (!c.var.ipCharged) await limitByIp(c);
    return next();
  }
  const budget = principal.kind === "service" ? SERVICE_BUDGET : PERSON_BUDGET;
  const limiter = principal.kind === "service" ? c.env.SERVICE_RATE_LIMIT : c.env.TOKEN_RATE_LIMIT;
  const admission = admit(limiter, budget, principal.tokenId);
  c.set("admitted", admission);
  const refused = () =>
    tooManyRequests(
      `this token made more than ${budget.perMinute} requests in the last minute; retry after the Retry-After delay`,
      WINDOW_SECONDS,
    );
  if (!readsOnly(c)) {
    if (!(await admission)) throw refused();
    await next();
  } else {
    // A read (and the ringing path, a question) does its work while its budget is checked: one
    // round of I/O less. A refused read's answer is replaced by the 429; it changed nothing.
    await next();
    if (!(await admission)) {
      const error = refused();
      c.res = c.json(errorBody(429, error.detail), 429, error.headers);
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
  seen: Map<number, number>;
  refusedUntil: Map<number, number>;
  used: Map<number, { window: number; count: number }>;
};
const sampleState = (): SampleState => ({ seen: new Map(), refusedUntil: new Map(), used: new Map() });

/** Binding limits in wrangler.toml: SERVICE_RATE_LIMIT 7,500 (60,000 / 8), TOKEN_RATE_LIMIT 125 (1,000 / 8). */
const SERVICE_BUDGET: Budget = { name: "service", perMinute: 60_000, sample: 8, state: sampleState() };
const PERSON_BUDGET: Budget = { name: "person", perMinute: 1_000, sample: 8, state: sampleState() };
/** Entries kept per budget; a full map starts over (an isolate rarely sees this many tokens a minute). */
const MAX_TRACKED_TOKENS = 10_000;

async function admit(limiter: RateLimit, { sample, state }: Budget, tokenId: number): Promise<boolean> {
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

/** Charges one request to the client IP's budget; 429 when it is spent. */
export async function limitByIp(c: Context<AppEnv>) {
  c.set("ipCharged", true);
  const { success } = await c.env.IP_RATE_LIMIT.limit({ key: `ip:${c.req.header("CF-Connecting-IP") ?? "unknown"}` });
  if (!success) {
    throw tooManyRequests(
      "this address made more than 300 requests without a valid token in the last minute; retry after the Retry-After delay",
      WINDOW_SECONDS,
    );
  }
}
