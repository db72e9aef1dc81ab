import { createRoute } from "@hono/zod-openapi";
import { bearerSecurity, errorResponses, jsonContent } from "../../lib/openapi";
import { requireAuth } from "../../middleware/auth";
import { AcceptedSchema, ScanEventBatchSchema } from "./scans.schemas";

export const postScanEvents = createRoute({
  method: "post",
  operationId: "postScanEvents",
  path: "/internal/scan-events",
  tags: ["Scans"],
  summary: "Submit scan events (the scanner)",
  description:
    "Needs a service token with scope `scans:write`. The body is a bare array of 1–100 events. The whole batch is " +
    "validated first (any bad event → 400 naming its index, nothing queued), then queued and applied " +
    "asynchronously, in order and idempotently: resending a batch changes nothing twice. `found` creates a " +
    "`pending` exposure; `removal_confirmed` closes an `in_progress` one. Webhooks follow.",
  security: bearerSecurity,
  middleware: [requireAuth({ scope: "scans:write" })] as const,
  request: { body: { required: true, content: { "application/json": { schema: ScanEventBatchSchema } } } },
  responses: {
    202: jsonContent(AcceptedSchema, "Queued; applied shortly"),
    ...errorResponses(400, 401, 403, 413, 429),
  },
});
