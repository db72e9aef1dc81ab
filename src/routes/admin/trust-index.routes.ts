import { createRoute, z } from "@hono/zod-openapi";
import { bearerSecurity, errorResponses, jsonContent } from "../../lib/openapi";
import { requireAuth } from "../../middleware/auth";

/* The rebuild of the trust-lookup index and its mark (docs/architecture.md, "The rebuild and its mark"). */

const tags = ["Platform admin"];
const requireAdmin = requireAuth({ scope: "platform:admin" });
const NEEDS = "Needs a service token with scope `platform:admin` (the operator; `npm run admin`). ";

export const RebuildStatusSchema = z
  .object({
    state: z.enum(["never", "running", "complete"]).openapi({ example: "complete" }),
    complete: z.boolean().openapi({
      description:
        "The index is marked complete: a lookup whose keys are absent answers from that absence, with no D1 read",
      example: true,
    }),
    stage: z
      .enum(["people", "numbers", "companies"])
      .nullable()
      .openapi({ description: "The stage running now; null when none", example: null }),
    people: z.number().int().openapi({ description: "Secure-number holders whose keys were written", example: 3 }),
    numbers: z.number().int().openapi({ description: "Caller numbers whose records were written", example: 4 }),
    ranges: z
      .object({
        total: z.number().int().openapi({ description: "The running stage's ranges (each its own chain)", example: 4 }),
        done: z.number().int().openapi({ description: "Those of them finished", example: 3 }),
      })
      .openapi({
        description:
          "The running stage's progress: it is split into ranges of its keys worked on in parallel, and moves on when every range is done (none when no stage runs)",
      }),
    started_at: z.string().nullable().openapi({ example: "2026-11-25T21:00:00.000Z" }),
    finished_at: z.string().nullable().openapi({ example: "2026-11-25T21:00:02.000Z" }),
  })
  .openapi("TrustIndexRebuild");

export const startRebuild = createRoute({
  operationId: "adminStartTrustIndexRebuild",
  method: "post",
  path: "/internal/trust-index/rebuild",
  tags,
  summary: "Rebuild the trust-lookup index and mark it complete",
  description:
    NEEDS +
    "Starts the background job that writes every trust-lookup key from D1 and the person objects (100 people, " +
    "then 200 numbers per message) and then marks the index complete. Starting it while it runs resumes it " +
    "where it stands: it sends again a part of it that has not moved for 5 minutes (as the minute cron does), " +
    "never one still moving. Answers where it stood when it started; poll GET for progress.",
  security: bearerSecurity,
  middleware: [requireAdmin] as const,
  responses: {
    202: jsonContent(RebuildStatusSchema, "The rebuild is under way"),
    ...errorResponses(401, 403, 429),
  },
});

export const rebuildStatus = createRoute({
  operationId: "adminTrustIndexRebuildStatus",
  method: "get",
  path: "/internal/trust-index/rebuild",
  tags,
  summary: "Where the trust-index rebuild stands",
  description: NEEDS + "Its state, stage and counts, and whether the index is marked complete.",
  security: bearerSecurity,
  middleware: [requireAdmin] as const,
  responses: {
    200: jsonContent(RebuildStatusSchema, "The rebuild"),
    ...errorResponses(401, 403, 429),
  },
});
