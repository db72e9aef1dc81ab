import { z } from "@hono/zod-openapi";
import { EmailAddress } from "../../lib/email";
import { int64Id } from "../../lib/ids";
import { INTERNATIONAL_PHONE_PATTERN, phoneFromInternational, type Phone } from "../../lib/phone";

/* The shapes of signing in and of proving a phone (docs/app.md, "Signing in"). */

/** A phone written in E.164 (`+14155550100`; spaces and dashes are tolerated), as a valid number. */
export const E164Phone = z
  .string()
  .max(40)
  .transform((value, ctx): Phone => {
    const phone = phoneFromInternational(value);
    if (!phone) {
      ctx.addIssue({ code: "custom", message: "must be a valid phone number in E.164 form, e.g. +14155550100" });
      return z.NEVER;
    }
    return phone;
  })
  .openapi({
    type: "string",
    pattern: INTERNATIONAL_PHONE_PATTERN,
    example: "+14155550100",
    description: "A valid phone number in E.164 form (blanks, `-`, `.` and parentheses between digits are tolerated)",
  });

const addressFields = {
  email: EmailAddress.optional(),
  phone: E164Phone.optional(),
};

const exactlyOne = (value: { email?: unknown; phone?: unknown }) =>
  (value.email === undefined) !== (value.phone === undefined);
const EXACTLY_ONE = { message: "give exactly one of `email` and `phone`" };

export const CodeRequestSchema = z
  .object(addressFields)
  .strict()
  .refine(exactlyOne, EXACTLY_ONE)
  .openapi("SignInCodeRequest", { example: { email: "bob@acme.example" } });

/** A code as the user typed it: 6 digits (anything else is simply not the code). */
const CodeField = z.string().max(32).openapi({ description: "The 6-digit code from the message", example: "492817" });

export const SignInSchema = z
  .object({
    ...addressFields,
    code: CodeField,
    device_name: z.string().trim().min(1).max(100).openapi({
      description: "How the person will recognise this device in GET /me/devices",
      example: "Bob's Pixel 9",
    }),
  })
  .strict()
  .refine(exactlyOne, EXACTLY_ONE)
  .openapi("SignIn", { example: { email: "bob@acme.example", code: "492817", device_name: "Bob's Pixel 9" } });

export const CodeSentSchema = z
  .object({
    expires_in: z
      .number()
      .int()
      .openapi({ description: "Seconds the code is valid (when one was sent)", example: 600 }),
  })
  .openapi("CodeSent");

export const DeviceSchema = z
  .object({
    id: int64Id().openapi({ example: 12 }),
    name: z.string().openapi({ example: "Bob's Pixel 9" }),
    created_at: z.string().openapi({ format: "date-time", example: "2026-11-27T10:00:00.000Z" }),
  })
  .openapi("NewDevice");

export const SignedInSchema = z
  .object({
    token: z.string().openapi({ description: "The device's person token, shown once", example: "pk_q9…" }),
    device: DeviceSchema,
  })
  .openapi("SignedIn");

export const ConfirmCodeSchema = z.object({ code: CodeField.optional() }).strict().openapi("PhoneConfirmation");
