import { OpenAPIHono } from "@hono/zod-openapi";
import type { AppEnv } from "../types";
import { badRequest, describeZodError } from "./errors";

/**
 * Every router of the app is made here, so every route validates input the
 * same way: a zod failure becomes one 400 naming each offending field.
 */
export function createRouter() {
  return new OpenAPIHono<AppEnv>({
    defaultHook: (result) => {
      if (!result.success) throw badRequest(describeZodError(result.error, result.target));
    },
  });
}

export type AppRouter = ReturnType<typeof createRouter>;
