import { OpenAPIHono } from "@hono/zod-openapi";
import type { AppEnv } from "../types";
import { badRequest, describeZodError, notFound } from "./errors";

/**
 * Every router of the app is made here, so every route validates input the
 * same way: a zod failure becomes one 400 naming each offending field (a
 * path parameter that fails is a 404: that path names nothing).
 */
export function createRouter() {
  return new OpenAPIHono<AppEnv>({
    defaultHook: (result, c) => {
      if (result.success) return;
      // A path that does not name a resource (`/contacts/sync` on GET, `/site/abc`)
      // is an unknown route, as docs/decisions.md answers unknown routes and wrong methods.
      if (result.target === "param") {
        throw notFound(`there is no route ${c.req.method} ${c.req.path} (${describeZodError(result.error, "param")})`);
      }
      throw badRequest(describeZodError(result.error, result.target));
    },
  });
}

export type AppRouter = ReturnType<typeof createRouter>;
