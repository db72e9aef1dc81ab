import { z } from "@hono/zod-openapi";
import { callPolicies } from "../../domain/caller-verification";
import { int64Id, pathId } from "../../lib/ids";
import { SecureNumberSchema } from "../buzz/buzz.schemas";

/* ---------- GET /me ---------- */

export const MeSchema = z
  .object({
    id: int64Id().openapi({ description: "The caller's person id (the `sendable_id` of what they send)" }),
    first_name: z.string(),
    middle_name: z.string().nullable(),
    last_name: z.string(),
    secure_number: SecureNumberSchema.nullable().openapi({
      description: "The caller's secure number; null until the heartbeat assigns one (or the pool had none)",
    }),
    companies: z
      .array(
        z.object({
          id: int64Id(),
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

/* ---------- the caller's phones ---------- */

export const MyPhoneSchema = z
  .object({
    id: int64Id().openapi({ example: 1 }),
    country_code: z.string().openapi({ description: "Calling code, digits", example: "1" }),
    phone_number: z.string().openapi({ description: "National number, digits", example: "4155550199" }),
    phone_full: z.string().openapi({ description: "E.164", example: "+14155550199" }),
    primary: z.boolean().openapi({ example: true }),
    confirmed: z.boolean().openapi({
      description:
        "Whether you confirmed the number as yours. Only a confirmed phone (and your secure number) makes calls " +
        "from it trusted by the people who trust you; a phone your employer entered or changed is not confirmed.",
      example: true,
    }),
  })
  .openapi("MyPhone");

export const MyPhoneParams = z.object({ id: pathId("id", "Phone id (from GET /me/phones)") });

/* ---------- settings ---------- */

const callsField = z.enum(callPolicies).openapi({
  description:
    "Who may ring the caller's secure number: `everyone` they trust (the default), or `verified_only`: only " +
    "callers the carrier verified at attestation level A (STIR/SHAKEN), even when trusted",
  example: "verified_only",
});

export const SettingsSchema = z.object({ calls: callsField }).openapi("PersonSettings");

export const SettingsChangeSchema = z.object({ calls: callsField.optional() }).strict().openapi("PersonSettingsChange");
