import { createMiddleware } from "hono/factory";
import { notFound } from "../lib/errors";
import type { AppEnv } from "../types";

/**
 * Development-only routes (docs/decisions.md) exist only when `ENVIRONMENT` is
 * `development`: elsewhere they answer exactly like an unknown route, before
 * any auth, so production does not even reveal them.
 */
export const developmentOnly = createMiddleware<AppEnv>(async (c, next) => {
  if (c.env.ENVIRONMENT !== "development") throw notFound(`there is no route ${c.req.method} ${c.req.path}`);
  await next();
});
