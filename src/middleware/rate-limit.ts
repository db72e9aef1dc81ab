import type { Context } from "hono";
import { createMiddleware } from "hono/factory";
import { tooManyRequests } from "../lib/errors";
import type { AppEnv } from "../types";

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
  const limiter = service ? c.env.SERVICE_RATE_LIMIT : c.env.TOKEN_RATE_LIMIT;
  const { success } = await limiter.limit({ key: `token:${principal.tokenId}` });
  if (!success) {
    throw tooManyRequests(
      `this token made more than ${service ? "60000" : "1000"} requests in the last minute; retry after the Retry-After delay`,
      WINDOW_SECONDS,
    );
  }
  await next();
});

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
