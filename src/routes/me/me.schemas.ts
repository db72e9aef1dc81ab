import { z } from "@hono/zod-openapi";
import { callPolicies } from "../../domain/caller-verification";
import { PushTarget } from "../../domain/push";
import { int64Id, pathId } from "../../lib/ids";
import { CALLING_CODE_PATTERN, NATIONAL_NUMBER_PATTERN, phoneFromParts } from "../../lib/phone";
import { E164Phone } from "../auth/auth.schemas";
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

/** `{"phone": "+E.164"}`, or the number in two parts as employees' phones are written. */
export const NewPhoneSchema = z
  .union([
    z.object({ phone: E164Phone }).strict(),
    z
      .object({
        country_code: z.string().max(8).openapi({
          description: 'Calling code: "1", "+1" or the country "US" (case-insensitive)',
          minLength: 1,
          pattern: CALLING_CODE_PATTERN,
          example: "1",
        }),
        number: z.string().max(32).openapi({
          description: "National number: digits, optionally with `+()-.` and blanks; valid for `country_code`",
          minLength: 1,
          pattern: NATIONAL_NUMBER_PATTERN,
          example: "4155550199",
        }),
      })
      .strict()
      .transform((value, ctx) => {
        const phone = phoneFromParts(value.country_code, value.number);
        if (!phone) {
          ctx.addIssue({ code: "custom", message: "`country_code` and `number` must make a valid phone number" });
          return z.NEVER;
        }
        return { phone };
      }),
  ])
  .openapi("NewPhone", { example: { phone: "+14155550199" } });

/* ---------- devices ---------- */

export const DeviceListItemSchema = z
  .object({
    id: int64Id().openapi({ example: 12 }),
    name: z.string().openapi({ example: "Bob's Pixel 9" }),
    created_at: z.string().openapi({ format: "date-time", example: "2026-11-27T10:00:00.000Z" }),
    last_used_on: z.string().nullable().openapi({ format: "date", example: "2026-11-27" }),
    current: z.boolean().openapi({ description: "This is the device asking", example: true }),
  })
  .openapi("Device");

export const DeviceParams = z.object({ id: pathId("id", "Device id (from GET /me/devices)") });

/* ---------- push ---------- */

/** Where a device is woken: Web Push, FCM or APNs (domain/push.ts validates each). */
export const NewPushRegistrationSchema = PushTarget.openapi("NewPushRegistration", {
  example: {
    kind: "webpush",
    subscription: {
      endpoint: "https://updates.push.services.mozilla.com/wpush/v2/gAAAAABmExample",
      keys: {
        p256dh: "BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4",
        auth: "BTBZMqHH6r4Tts7J_aSIgg",
      },
    },
  },
});

const pushAnswer = {
  device_id: int64Id().openapi({ description: "The device (GET /me/devices)", example: 12 }),
  updated_at: z.string().openapi({ format: "date-time", example: "2026-11-27T10:00:00.000Z" }),
};

export const PushRegistrationSchema = z
  .discriminatedUnion("kind", [
    z.object({
      device_id: pushAnswer.device_id,
      kind: z.literal("webpush"),
      subscription: z.object({
        endpoint: z.string().openapi({ format: "uri" }),
        keys: z.object({ p256dh: z.string(), auth: z.string() }),
      }),
      updated_at: pushAnswer.updated_at,
    }),
    z.object({
      device_id: pushAnswer.device_id,
      kind: z.literal("fcm"),
      token: z.string(),
      updated_at: pushAnswer.updated_at,
    }),
    z.object({
      device_id: pushAnswer.device_id,
      kind: z.literal("apns"),
      token: z.string(),
      topic: z.string(),
      sandbox: z.boolean(),
      updated_at: pushAnswer.updated_at,
    }),
  ])
  .openapi("PushRegistration", {
    example: {
      device_id: 12,
      kind: "apns",
      token: "a9d0ed10e9cfd022a61cb08753f49c5a0b0dfb383697bf9f9d750a1003da19c7",
      topic: "com.example.privacy",
      sandbox: false,
      updated_at: "2026-11-27T10:00:00.000Z",
    },
  });

/* ---------- settings ---------- */

const callsField = z.enum(callPolicies).openapi({
  description:
    "Who may ring the caller's secure number: `everyone` they trust (the default), or `verified_only`: only " +
    "callers the carrier verified at attestation level A (STIR/SHAKEN), even when trusted",
  example: "verified_only",
});

export const SettingsSchema = z.object({ calls: callsField }).openapi("PersonSettings");

export const SettingsChangeSchema = z.object({ calls: callsField.optional() }).strict().openapi("PersonSettingsChange");
