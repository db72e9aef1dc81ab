import { createRoute } from "@hono/zod-openapi";
import { bearerSecurity, errorResponses, jsonContent } from "../../lib/openapi";
import { requirePerson } from "../../middleware/auth";
import { MeSchema } from "./me.schemas";

const tags = ["Me"];

/* ---------- GET /me ---------- */

export const getMe = createRoute({
  method: "get",
  operationId: "getMe",
  path: "/me",
  tags,
  summary: "Who the caller is",
  description:
    "The caller's person id, names, secure number and companies with their roles, and the kind of token that " +
    "asked. For person tokens; a service token gets 403.",
  security: bearerSecurity,
  middleware: [requirePerson] as const,
  responses: {
    200: jsonContent(MeSchema, "The caller"),
    ...errorResponses(401, 403, 429),
  },
});
