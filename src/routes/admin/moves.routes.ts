import { createRoute, z } from "@hono/zod-openapi";
import { bearerSecurity, errorResponses, jsonContent } from "../../lib/openapi";
import { requireAuth } from "../../middleware/auth";

/*
 * The one-time move of people's activity and blocked calls from D1 into
 * their own Durable Objects (docs/architecture.md, "The one-time move from D1").
 */

const tags = ["Platform admin"];
const requireAdmin = requireAuth({ scope: "platform:admin" });
const NEEDS = "Needs a service token with scope `platform:admin` (the operator; `npm run admin`). ";

export const PersonMoveStatusSchema = z
  .object({
    people: z.number().int().openapi({ description: "Accounts on the platform", example: 120 }),
    pending: z.number().int().openapi({ description: "People whose rows are being moved", example: 20 }),
    moved: z.number().int().openapi({ description: "People whose D1 rows are all in their object", example: 100 }),
    mismatch: z
      .number()
      .int()
      .openapi({ description: "People whose object holds fewer of their D1 rows than D1 (start again)", example: 0 }),
  })
  .openapi("PersonMoveStatus");

export const startPersonMoves = createRoute({
  operationId: "adminStartPersonMoves",
  method: "post",
  path: "/internal/person-data/move",
  tags,
  summary: "Move every person's activity and blocked calls from D1 into their object",
  description:
    NEEDS +
    "Starts the background job: people are walked 100 per message, and each person's rows are copied in chunks " +
    "of 500, then counted on both sides. Safe to start again: copied rows are not copied twice. Answers where " +
    "the move stood when it started; poll GET for progress.",
  security: bearerSecurity,
  middleware: [requireAdmin] as const,
  responses: {
    202: jsonContent(PersonMoveStatusSchema, "The move is under way"),
    ...errorResponses(401, 403, 429),
  },
});

export const personMoveStatus = createRoute({
  operationId: "adminPersonMoveStatus",
  method: "get",
  path: "/internal/person-data/move",
  tags,
  summary: "Where the move of person data stands",
  description: NEEDS + "People by state: pending, moved, mismatch (and how many accounts exist).",
  security: bearerSecurity,
  middleware: [requireAdmin] as const,
  responses: {
    200: jsonContent(PersonMoveStatusSchema, "People by state"),
    ...errorResponses(401, 403, 429),
  },
});
