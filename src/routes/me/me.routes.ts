import { createRoute } from "@hono/zod-openapi";
import { bearerSecurity, errorResponses, jsonContent } from "../../lib/openapi";
import { requirePerson } from "../../middleware/auth";
import { SettingsChangeSchema, SettingsSchema } from "./me.schemas";

const tags = ["Secure calling"];

/* ---------- settings ---------- */

export const getSettings = createRoute({
  method: "get",
  operationId: "getMySettings",
  path: "/me/settings",
  tags,
  summary: "The caller's settings",
  security: bearerSecurity,
  middleware: [requirePerson] as const,
  responses: {
    200: jsonContent(SettingsSchema, "The caller's settings"),
    ...errorResponses(401, 403, 429),
  },
});

export const putSettings = createRoute({
  method: "put",
  operationId: "putMySettings",
  path: "/me/settings",
  tags,
  summary: "Change the caller's settings",
  description:
    "`calls: verified_only` (strict mode) lets only callers verified at attestation level A ring, even trusted " +
    "ones; `everyone` goes back to the default. Honoured by every trust-lookup within about 60 s. Fields left " +
    "out stay as they are.",
  security: bearerSecurity,
  middleware: [requirePerson] as const,
  request: { body: { required: true, content: { "application/json": { schema: SettingsChangeSchema } } } },
  responses: {
    200: jsonContent(SettingsSchema, "The caller's settings, changed"),
    ...errorResponses(400, 401, 403, 413, 429),
  },
});
