import { OpenAPIHono, type z } from "@hono/zod-openapi";
import { createMiddleware } from "hono/factory";
import type { AppEnv } from "../types";
import { badRequest, describeZodError, notFound } from "../lib/errors";
import { withCommonHeaders, type CommonHeader } from "../lib/openapi";
import { developmentOnly } from "../middleware/development-only";
import { RINGING_PATH } from "../middleware/request-kind";

/**
 * Every router of the app is made here, so every route validates input the
 * same way: a zod failure becomes one 400 naming each offending field (a
 * path parameter that fails is a 404: that path names nothing), and the path
 * is checked before the route's own middleware (see `pathFirst`).
 */
export function createRouter() {
  const router = new OpenAPIHono<AppEnv>({
    defaultHook: (result, c) => {
      if (result.success) return;
      if (result.target === "param") throw noRoute(c.req.method, c.req.path, result.error);
      throw badRequest(describeZodError(result.error, result.target));
    },
  });
  const openapi = router.openapi;
  router.openapi = ((declared, handler, hook) => {
    const route = { ...declared, responses: withCommonHeaders(declared.responses, commonHeadersOf(declared)) };
    const params = route.request?.params as z.ZodType | undefined;
    if (!params) return openapi(route, handler, hook);
    const middleware = route.middleware === undefined ? [] : [route.middleware].flat();
    // A development-only route answers like an unknown route in production, whatever its path holds:
    // its own check goes before the path's.
    const first = middleware.filter((step) => step === developmentOnly);
    const rest = middleware.filter((step) => step !== developmentOnly);
    return openapi({ ...route, middleware: [...first, pathFirst(params), ...rest] }, handler, hook);
  }) as typeof openapi;
  return router;
}

/**
 * Which of the headers the app's middleware adds (lib/openapi.ts
 * `COMMON_HEADERS`) an answer of `route` carries: `X-Request-Id` always
 * (src/app.ts); `RateLimit`/`RateLimit-Policy` on a success of a route that
 * takes only tokens (middleware/rate-limit.ts sets them for a principal's
 * answer below 400); `x-d1-bookmark` on any answer of a read, a success of a
 * write (middleware/db.ts). The stream's 101 is a success of a read, a preflight a read.
 */
function commonHeadersOf(route: { method: string; path: string; security?: Record<string, string[]>[] }) {
  const tokensOnly = !!route.security?.length && route.security.every((scheme) => Object.keys(scheme).length > 0);
  // A preflight (OPTIONS) reads too: its container's lookup, whose 404 carries the bookmark.
  const reads = route.method === "get" || route.method === "options" || route.path === RINGING_PATH;
  return (status: number): CommonHeader[] => {
    const success = status < 400;
    return [
      "X-Request-Id",
      ...(success && tokensOnly ? (["RateLimit", "RateLimit-Policy"] as const) : []),
      ...(reads || success ? (["x-d1-bookmark"] as const) : []),
    ];
  };
}

/**
 * A path that does not name a resource (`/contacts/sync` on GET, `/site/abc`)
 * is an unknown route, as docs/decisions.md answers unknown routes and wrong
 * methods.
 */
const noRoute = (method: string, path: string, error: z.ZodError) =>
  notFound(`there is no route ${method} ${path} (${describeZodError(error, "param")})`);

/**
 * Runs before the route's middleware: a path whose ids are not ids is 404
 * for everyone, before the token or permission checks (docs/decisions.md,
 * "Unknown routes"); else a Viewer would get 403 where an Admin gets 404.
 * `company_id` is left to `companyAccess`, which answers it as a company
 * that does not exist.
 */
function pathFirst(params: z.ZodType) {
  return createMiddleware<AppEnv>(async (c, next) => {
    const result = params.safeParse(c.req.param());
    if (!result.success && result.error.issues.some((issue) => issue.path[0] !== "company_id")) {
      throw noRoute(c.req.method, c.req.path, result.error);
    }
    await next();
  });
}

export type AppRouter = ReturnType<typeof createRouter>;
