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

/*
 * The companies' move into their own objects (docs/architecture.md, "The Company object"): the
 * finished webhook history, which D1 hands to each company's object, and the scan side of each
 * company older than migration 0032 (services/company-scan-moves.ts).
 */

export const CompanyMoveStatusSchema = z
  .object({
    finished_in_d1: z.number().int().openapi({
      description: "Finished webhook deliveries still in D1, to be handed to their company's object (0: moved)",
      example: 0,
    }),
    on_their_way: z.number().int().openapi({
      description: "Deliveries still being sent or retried: D1 keeps them until they finish",
      example: 12,
    }),
    scan_side_in_d1: z
      .number()
      .int()
      .openapi({
        description:
          "Companies whose scan side (scans, results, exposures and their history) still has rows in D1 to move " +
          "into their object or to delete there (0: moved). A company is served from D1 until its move flips it.",
        example: 0,
      }),
  })
  .openapi("CompanyMoveStatus");

export const startCompanyMoves = createRoute({
  operationId: "adminStartCompanyMoves",
  method: "post",
  path: "/internal/company-data/move",
  tags,
  summary: "Move every company's finished webhook history and older scan side from D1 into its object",
  description:
    NEEDS +
    "Starts two background jobs. The history: finished deliveries are handed to their company's object 100 at a " +
    "time, oldest first, with their attempts, and leave D1; reads merge both stores throughout. The scan side of " +
    "each company still served from D1 (created before its object kept scans), one company at a time: its members' " +
    "scans, results, exposures and their history are copied into its object 100 members at a time (exposures keep " +
    "their ids), then the company is served from its object and copied once more, then D1's rows of members who " +
    "belong to no company still served from D1 are deleted. A company is served from D1 until its move finishes. " +
    "Safe to start again at any point: a move resumes where it stood, a row copied twice is kept once, and a second " +
    "run after it finished finds nothing to move. Answers where the moves stood when they started; poll GET for " +
    "progress.",
  security: bearerSecurity,
  middleware: [requireAdmin] as const,
  responses: {
    202: jsonContent(CompanyMoveStatusSchema, "The move is under way"),
    ...errorResponses(401, 403, 429),
  },
});

export const companyMoveStatus = createRoute({
  operationId: "adminCompanyMoveStatus",
  method: "get",
  path: "/internal/company-data/move",
  tags,
  summary: "Where the move of company data stands",
  description:
    NEEDS +
    "Finished deliveries still in D1 (0 once moved), those still on their way, and companies whose scan side still " +
    "has rows in D1 (0 once moved).",
  security: bearerSecurity,
  middleware: [requireAdmin] as const,
  responses: {
    200: jsonContent(CompanyMoveStatusSchema, "What is left in D1"),
    ...errorResponses(401, 403, 429),
  },
});
