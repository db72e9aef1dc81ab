import { createRoute, z } from "@hono/zod-openapi";
import { COUNT_CAP } from "../../services/backlog";
import { bearerSecurity, errorResponses, jsonContent } from "../../lib/openapi";
import { requireAuth } from "../../middleware/auth";

/*
 * How far behind the background work is (docs/architecture.md, "Watching
 * the backlog"); the minute cron logs the same body as a metric line.
 */

const tags = ["Platform admin"];
const requireAdmin = requireAuth({ scope: "platform:admin" });
const NEEDS = "Needs a service token with scope `platform:admin` (the operator; `npm run admin`). ";

const BacklogSchema = z
  .object({
    count: z
      .number()
      .int()
      .openapi({ description: `Items due, counted up to ${COUNT_CAP.toLocaleString("en-US")}`, example: 0 }),
    capped: z.boolean().openapi({ description: "There are more than `count`" }),
    oldest_at: z.string().nullable().openapi({
      format: "date-time",
      description: "When the oldest item became due; null when none is",
      example: null,
    }),
    oldest_age_seconds: z
      .number()
      .int()
      .nullable()
      .openapi({ description: "How long ago that was, in seconds", example: null }),
  })
  .openapi("Backlog");

export const BackgroundStatusSchema = z
  .object({
    at: z.string().openapi({ format: "date-time", description: "When this was measured" }),
    index_work: BacklogSchema.openapi({
      description: "Trust-index keys not yet rewritten in KV (`index_work` rows), oldest by when they became stale",
    }),
    outbox: BacklogSchema.openapi({
      description:
        "Webhook history rows still `pending`: not yet handed to the delivery queue, or handed back after the queue gave up (the oldest among the 10,000 least recently touched)",
    }),
    removals: BacklogSchema.openapi({ description: "Exposures waiting for their removal request" }),
    dead_letters: BacklogSchema.openapi({
      description: "Dead-lettered messages kept for a redrive (scan-event batches, background chunks)",
    }),
  })
  .openapi("BackgroundStatus");

export const status = createRoute({
  operationId: "adminStatus",
  method: "get",
  path: "/internal/status",
  tags,
  summary: "How far behind the background work is",
  description:
    NEEDS +
    "Per kind of due background work (trust-index rewrites, webhook history rows waiting to be enqueued, removal " +
    "requests, dead letters): how many items are due and the age of the oldest. Within normal operation each " +
    "oldest age stays under a few minutes (removals: under an hour); the minute cron logs the same body as a " +
    '`"metric": "background_backlog"` line. Bounded reads: counts stop at 10,000.',
  security: bearerSecurity,
  middleware: [requireAdmin] as const,
  responses: {
    200: jsonContent(BackgroundStatusSchema, "The backlog of each kind of background work"),
    ...errorResponses(401, 403, 429),
  },
});
