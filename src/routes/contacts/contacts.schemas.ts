import { CompanyRefSchema } from "../companies/companies.schemas";
import { CONTACT_CAPS } from "../../services/contacts";
import { z } from "@hono/zod-openapi";
import { EmailAddress } from "../../lib/email";
import { IdSchema, pathId, int64Id } from "../../lib/ids";
import { cursorQuery, pageQuery } from "../../lib/pagination";
import { REQUEST_CURSOR } from "../../services/trust-requests";
import { INTERNATIONAL_PHONE_PATTERN, phoneFromInternational } from "../../lib/phone";
import { CalendarDate, QueryTimestamp } from "../../lib/time";
import { CONTACT_COLLECTIONS, type ContactCollection } from "../../services/contacts";
import { whenAbsent } from "../../lib/openapi";

const strings = (description: string) => z.array(z.string()).openapi({ description });

export const ContactSchema = z
  .object({
    id: int64Id().openapi({ example: 12 }),
    profile_icon: z.string().openapi({ description: "Avatar URL of the linked platform user; empty when none" }),
    display_name: z.string().openapi({ example: "Dana Doe" }),
    birthday: z.string().nullable().openapi({ description: "YYYY-MM-DD", example: "1991-04-12" }),
    email: strings("Email addresses (with `include=emails` when listing)").optional(),
    phone: strings("Phone numbers in E.164 (with `include=phone_numbers` when listing)")
      .optional()
      .openapi({ example: ["+14155550123"] }),
    address: strings("One free-text line per address (with `include=addresses` when listing)").optional(),
    risk_score: z.number().int().openapi({ description: "The linked platform user's; 0 when none" }),
    labels: z.array(z.string()).openapi({ example: ["family"] }),
    user_id: int64Id().nullable().openapi({
      description: "The platform user whose phone, secure number or email matches the contact's; null when none",
    }),
    connected: z.boolean().openapi({ description: "Whether the contact is linked to a platform user" }),
    e2ee: z.boolean().openapi({ description: "Whether the linked platform user saved end-to-end encryption data" }),
    created: z.string().openapi({ format: "date-time" }),
    updated: z.string().openapi({ format: "date-time" }),
  })
  .openapi("Contact");

const unique = <T>(values: T[]) => [...new Set(values)];

const PhoneNumber = z
  .string()
  .max(40)
  .transform((value, ctx) => {
    const phone = phoneFromInternational(value);
    if (!phone) {
      ctx.addIssue({ code: "custom", message: "must be a valid phone number written with its + country code" });
      return z.NEVER;
    }
    return phone.e164;
  })
  .openapi({
    type: "string",
    pattern: INTERNATIONAL_PHONE_PATTERN,
    description: "A valid phone number written with its `+` and calling code",
    example: "+1 415 555 0123",
  });

const writeFields = {
  display_name: z.string().trim().max(200).optional().openapi({ example: "Dana Doe" }),
  birthday: CalendarDate.nullable().optional().openapi({ description: "YYYY-MM-DD; null clears it" }),
  emails: z.array(EmailAddress).max(CONTACT_CAPS.emails).transform(unique).optional(),
  phone_numbers: z
    .array(PhoneNumber)
    .max(CONTACT_CAPS.phone_numbers)
    .transform(unique)
    .optional()
    .openapi({ description: "International form; stored and read in E.164" }),
  addresses: z
    .array(z.string().trim().min(1).max(500))
    .max(CONTACT_CAPS.addresses)
    .transform(unique)
    .optional()
    .openapi({ description: "One free-text line per address" }),
  labels: z.array(z.string().trim().min(1).max(100)).max(50).transform(unique).optional(),
};

/**
 * A contact as written (OpenAPI component `ContactWrite`): only the writable fields; read-only ones
 * sent anyway are ignored (docs/decisions.md, "Contacts"). A field left out keeps its value,
 * a collection sent replaces the stored one.
 */
export const ContactWriteSchema = z.object(writeFields).openapi("ContactWrite");

export const ContactSyncSchema = z
  .array(
    z
      .object({
        id: IdSchema.optional().openapi({ description: "Updates this contact; without it a contact is created" }),
        ...writeFields,
      })
      .openapi("ContactSyncElement"),
  )
  .max(500);

export const ContactParams = z.object({ id: pathId("id", "Contact id") });

/** What `include` accepts: names of CONTACT_COLLECTIONS, comma-separated, blanks around them ignored. */
const INCLUDE_ITEM = `\\s*(?:(?:${CONTACT_COLLECTIONS.join("|")})\\s*)?`;
const INCLUDE_PATTERN = `^${INCLUDE_ITEM}(?:,${INCLUDE_ITEM})*$`;

/** A day a week ago, so the example `since` stays inside the 90 days deletions are kept. */
const A_WEEK_AGO = new Date(Date.now() - 7 * 24 * 3600 * 1000).toISOString().slice(0, 10) + "T00:00:00Z";

export const ContactsQuery = pageQuery(10, 100).extend({
  updated_at: QueryTimestamp.optional().openapi({
    param: { name: "updated_at", in: "query" },
    description: "Only contacts created or updated at or since this time",
  }),
  include: z
    .string()
    .optional()
    .transform((value, ctx) => {
      const names = (value ?? "")
        .split(",")
        .map((name) => name.trim())
        .filter(Boolean);
      const unknown = names.filter((name) => !(CONTACT_COLLECTIONS as readonly string[]).includes(name));
      if (unknown.length > 0) {
        ctx.addIssue({
          code: "custom",
          message: `may only name ${CONTACT_COLLECTIONS.join(", ")} (not ${unknown.join(", ")})`,
        });
        return z.NEVER;
      }
      return new Set(names as ContactCollection[]);
    })
    .openapi({
      param: { name: "include", in: "query" },
      type: "string",
      description: "Comma-separated: emails, addresses, phone_numbers",
      pattern: INCLUDE_PATTERN,
      example: "emails,phone_numbers",
    }),
});

/** `GET /contacts/requests`: newest first, 100 a page by default (docs/decisions.md, "Paging"). */
export const TrustRequestsQuery = cursorQuery(100, 500, REQUEST_CURSOR);

export const DeletedContactsQuery = pageQuery(100, 1000).extend({
  since: QueryTimestamp.openapi({
    param: { name: "since", in: "query", required: true },
    description:
      "Contacts deleted at or after this time (inclusive). At most 90 days back; older is 410: resynchronise in full",
    example: A_WEEK_AGO,
  }),
});

export const DeletedContactSchema = z
  .object({
    id: int64Id().openapi({ description: "The deleted contact's id", example: 12 }),
    deleted_at: z.string().openapi({ format: "date-time" }),
  })
  .openapi("DeletedContact");

export const SuccessSchema = z.object({ success: z.literal(true) }).openapi("Success");

export const TrustRequestSchema = z
  .object({
    id: int64Id().openapi({ description: "The person asking for trust" }),
    first_name: z.string(),
    middle_name: z.string().nullable(),
    last_name: z.string(),
    contact_reason: z.string(),
    updated_at: z.string().openapi({ format: "date-time", description: "When they (last) asked" }),
  })
  .openapi("TrustRequest");

export const TrustRequestCreateSchema = z
  .object({
    user_id: IdSchema.optional().openapi({ description: "The platform user to ask" }),
    phone: PhoneNumber.optional().openapi({ description: "…or their phone or secure number" }),
    email: EmailAddress.optional().openapi({ description: "…or their email" }),
    contact_reason: whenAbsent(z.string().trim().max(500), "").openapi({
      description: "Empty when absent",
      example: "We met at the conference",
    }),
  })
  .superRefine((value, ctx) => {
    const given = (["user_id", "phone", "email"] as const).filter((key) => value[key] !== undefined);
    if (given.length !== 1) {
      ctx.addIssue({ code: "custom", message: "give exactly one of `user_id`, `phone` or `email`" });
    }
  })
  .openapi("TrustRequestCreate", {
    description: "Exactly one of `user_id`, `phone` or `email` names the person asked",
    oneOf: [{ required: ["user_id"] }, { required: ["phone"] }, { required: ["email"] }],
  });

export const TrustDecisionSchema = z
  .object({
    trusted: z
      .union([z.literal(1), z.literal(0), z.boolean()], { error: "must be 1, 0, true or false" })
      .transform((value) => value === 1 || value === true)
      .openapi({ type: "integer", enum: [1, 0], description: "1 (or true) to trust, 0 (or false) to untrust" }),
  })
  .openapi("TrustDecision");

export const TrustDecisionResultSchema = z
  .object({
    id: int64Id().openapi({ description: "The requester" }),
    trusted: z.boolean(),
  })
  .openapi("TrustDecisionResult");

export const RequesterParams = z.object({ id: pathId("id", "The requester's person id") });

export const CompanyEmployeesSchema = z
  .object({
    company: CompanyRefSchema,
    employees: z.array(z.object({ id: int64Id(), first_name: z.string(), last_name: z.string() })),
  })
  .openapi("CompanyWithEmployees");

export const CompanyParams = z.object({ id: pathId("id", "A company the caller belongs to") });

export const PersonParams = z.object({ id: pathId("id", "The caller's own person id") });
