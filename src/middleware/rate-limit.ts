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
 * - service tokens: their own budget (SERVICE_RATE_LIMIT, 60,000 / 60 s), sized
 *   for a telephony provider's whole call volume;
 * - person tokens: 1,000 / 60 s each (TOKEN_RATE_LIMIT);
 * - requests without a valid token: 300 / 60 s per client IP (IP_RATE_LIMIT),
 *   also charged by `identify` before an uncached token is looked up in D1.
 * A refused request is a 429 with Retry-After, never a silent answer.
 * Runs after `identify`, so a valid token is counted against its own budget.
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
  const service = principal.kind === "service";
  const admission = service
    ? admitService(c.env.SERVICE_RATE_LIMIT, principal.tokenId)
    : c.env.TOKEN_RATE_LIMIT.limit({ key: `token:${principal.tokenId}` });
  const refused = () =>
    tooManyRequests(
      `this token made more than ${service ? SERVICE_BUDGET : 1000} requests in the last minute; retry after the Retry-After delay`,
      WINDOW_SECONDS,
    );
  if (!readsOnly(c)) {
    if (!(await admission).success) throw refused();
    return next();
  }
  // A read (and the ringing path, a question) does its work while its budget is checked: one
  // round of I/O less. A refused read's answer is replaced by the 429; it changed nothing.
  await next();
  if (!(await admission).success) {
    const error = refused();
    c.res = c.json(errorBody(429, error.detail), 429, error.headers);
  }
});

/**
 * A service token's budget (60,000 / 60 s) is counted by sampling: each
 * isolate asks the binding for one request in `SERVICE_SAMPLE` of a token
 * (its first, then every 8th), against a binding limit of 60,000 / 8 = 7,500
 * (wrangler.toml). The provider's calls thus cost one binding call in eight
 * instead of one each; the count is approximate, never lenient at low volume
 * (an isolate's first request always counts). Once refused, the isolate
 * refuses that token until the window ends.
 */
export const SERVICE_BUDGET = 60_000;
const SERVICE_SAMPLE = 8;
const serviceCounts = new Map<number, number>();
const serviceRefusedUntil = new Map<number, number>();

async function admitService(limiter: RateLimit, tokenId: number): Promise<{ success: boolean }> {
  const now = Date.now();
  if ((serviceRefusedUntil.get(tokenId) ?? 0) > now) return { success: false };
  const seen = serviceCounts.get(tokenId) ?? 0;
  serviceCounts.set(tokenId, seen + 1);
  if (seen % SERVICE_SAMPLE !== 0) return { success: true };
  const outcome = await limiter.limit({ key: `token:${tokenId}` });
  if (!outcome.success) serviceRefusedUntil.set(tokenId, now - (now % (WINDOW_SECONDS * 1000)) + WINDOW_SECONDS * 1000);
  return outcome;
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
