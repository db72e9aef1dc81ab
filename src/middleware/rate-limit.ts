import { createMiddleware } from "hono/factory";
import { tooManyRequests } from "../lib/errors";
import type { AppEnv } from "../types";

/** Both limits use a 60 s window (wrangler.toml), so that is the longest wait. */
const WINDOW_SECONDS = 60;

/**
 * DECISIONS §8: 1,000 requests per 60 s per token, 300 per 60 s per client IP
 * for requests without a valid token, counted by the Workers rate-limiting
 * binding (https://developers.cloudflare.com/workers/runtime-apis/bindings/rate-limit/).
 * Runs after `identify`, so a valid token is counted against its own budget.
 */
export const rateLimit = createMiddleware<AppEnv>(async (c, next) => {
  // Health checks come from load balancers and must never be throttled.
  if (c.req.path === "/healthz") return next();
  const principal = c.var.principal;
  const { success } = principal
    ? await c.env.TOKEN_RATE_LIMIT.limit({ key: `token:${principal.tokenId}` })
    : await c.env.IP_RATE_LIMIT.limit({ key: `ip:${c.req.header("CF-Connecting-IP") ?? "unknown"}` });
  if (!success) {
    throw tooManyRequests(
      principal
        ? "this token made more than 1000 requests in the last minute; retry after the Retry-After delay"
        : "this address made more than 300 unauthenticated requests in the last minute; retry after the Retry-After delay",
      WINDOW_SECONDS,
    );
  }
  await next();
});
