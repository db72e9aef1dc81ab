import { z } from "@hono/zod-openapi";
import { SecureNumberSchema } from "../buzz/buzz.schemas";

/* ---------- GET /me ---------- */

export const MeSchema = z
  .object({
    id: z.number().int().openapi({ description: "The caller's person id (the `sendable_id` of what they send)" }),
    first_name: z.string(),
    middle_name: z.string().nullable(),
    last_name: z.string(),
    secure_number: SecureNumberSchema.nullable().openapi({
      description: "The caller's secure number; null until the heartbeat assigns one (or the pool had none)",
    }),
    companies: z
      .array(
        z.object({
          id: z.number().int(),
          name: z.string(),
          roles: z.array(z.string()).openapi({ description: "The roles the caller holds there", example: ["Admin"] }),
        }),
      )
      .openapi({ description: "The companies the caller belongs to, by id" }),
    token_kind: z
      .enum(["person"])
      .openapi({ description: "The kind of the token that asked: always `person` (service tokens get 403)" }),
  })
  .openapi("Me");
