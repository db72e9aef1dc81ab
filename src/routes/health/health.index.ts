import { createRoute, z } from "@hono/zod-openapi";
import { createRouter } from "../create-router";
import { jsonContent, noSecurity } from "../../lib/openapi";

const health = createRoute({
  method: "get",
  operationId: "healthCheck",
  path: "/healthz",
  tags: ["Operations"],
  summary: "Liveness check (no auth, not rate limited)",
  security: noSecurity,
  responses: { 200: jsonContent(z.object({ ok: z.literal(true) }).openapi("Health"), "The Worker is serving") },
});

export default createRouter().openapi(health, (c) => c.json({ ok: true as const }, 200));
