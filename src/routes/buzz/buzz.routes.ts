import { createRoute, z } from "@hono/zod-openapi";
import { bearerSecurity, errorResponses, jsonContent } from "../../lib/openapi";
import { requirePerson } from "../../middleware/auth";

const tags = ["Secure calling"];

export const EncryptionSchema = z
  .object({
    hash: z
      .string()
      .trim()
      .min(1)
      .max(512)
      .openapi({ description: "Identifies the user across devices", example: "9f86d081884c7d65" }),
    e2e_id: z
      .string()
      .trim()
      .min(1)
      .max(512)
      .openapi({ description: "The user's id at the end-to-end encryption provider", example: "e2e-user-42" }),
  })
  .openapi("EncryptionData");

export const putEncryption = createRoute({
  method: "put",
  path: "/apps/buzz/encryption",
  tags,
  summary: "Save the caller's end-to-end encryption identifiers",
  security: bearerSecurity,
  middleware: [requirePerson] as const,
  request: { body: { required: true, content: { "application/json": { schema: EncryptionSchema } } } },
  responses: {
    200: jsonContent(EncryptionSchema, "The saved encryption data"),
    ...errorResponses(400, 401, 403, 413, 429),
  },
});
