import { createMiddleware } from "hono/factory";
import { createDeps } from "../services/outbox";
import type { AppEnv } from "../types";

/** Puts the drizzle client and the command dependencies on the context, once per request. */
export const database = createMiddleware<AppEnv>(async (c, next) => {
  const deps = createDeps(c.env);
  c.set("deps", deps);
  c.set("db", deps.db);
  await next();
});
