import { z } from "@hono/zod-openapi";
import { activityTypes, partyTypes } from "../../db/schema";
import { blockReasons, callerVerifications } from "../../domain/caller-verification";
import { IdSchema, pathId, int64Id } from "../../lib/ids";
import { CompanyRefSchema } from "../companies/companies.schemas";
import { ContactSchema } from "../contacts/contacts.schemas";
import { whenAbsent } from "../../lib/openapi";

const LOOKUP_FIELDS = {
  number_code: { description: "Country calling code of the receiving (secure) number", example: "1", required: true },
  number: { description: "Receiving number without formatting", example: "2025550101", required: true },
  inbound_code: { description: "Country calling code of the caller", example: "1", required: true },
  inbound: { description: "Caller number without formatting", example: "4155550100", required: true },
  caller_id: { description: "Caller id of the inbound number", example: "ACME CORP", required: false },
} as const;

/** The caller's verification (STIR/SHAKEN) in each provider's spelling (docs/providers.md). */
const VERIFICATION_FIELDS = {
  StirVerstat: {
    description:
      "Twilio's caller verification: `TN-Validation-Passed-A|B|C`, `TN-Validation-Failed-A|B|C` or `No-TN-Validation`",
    example: "TN-Validation-Passed-A",
  },
  verstat: {
    description: "The SIP form: `TN-Validation-Passed` (read as level A), `TN-Validation-Failed` or `No-TN-Validation`",
    example: "TN-Validation-Passed",
  },
  shaken_stir_attestation: { description: "Telnyx's attestation level: `A`, `B` or `C`", example: "A" },
  shaken_stir_validated: {
    description:
      "Telnyx: whether the attestation verified (`true`/`false`); `false` is a failed verification, and the " +
      "attestation level counts only with `true`",
    example: "true",
  },
} as const;

/**
 * trust-lookup's fields (docs/decisions.md, "trust-lookup's number forms"): the seed's, where the numbers may
 * also be given whole in E.164 without their code, and the names Twilio and
 * Telnyx use. None is required by itself: the receiver is one of
 * `number_code` + `number`, `number` in E.164, `To`, `Called` (the first
 * present wins, in that order); the caller likewise.
 */
const TRUST_LOOKUP_FIELDS = {
  number_code: {
    description: "Country calling code of the receiving (secure) number; leave it out when `number` is in E.164",
    example: "1",
  },
  number: {
    description: "Receiving number: without formatting after `number_code`, or whole in E.164 (`+12025550101`)",
    example: "2025550101",
  },
  inbound_code: {
    description: "Country calling code of the caller; leave it out when `inbound` is in E.164",
    example: "1",
  },
  inbound: {
    description: "Caller number: without formatting after `inbound_code`, or whole in E.164 (`+14155550100`)",
    example: "4155550100",
  },
  caller_id: LOOKUP_FIELDS.caller_id,
  To: {
    description: "Receiving number in E.164 (Twilio, Telnyx); used when `number` is absent",
    example: "+12025550101",
  },
  From: {
    description: "Caller number in E.164 (Twilio, Telnyx); used when `inbound` is absent",
    example: "+14155550100",
  },
  Called: { description: "Receiving number in E.164; used when `number` and `To` are absent", example: "+12025550101" },
  Caller: { description: "Caller number in E.164; used when `inbound` and `From` are absent", example: "+14155550100" },
  ...VERIFICATION_FIELDS,
} as const;

type TrustLookupField = keyof typeof TRUST_LOOKUP_FIELDS;

/**
 * trust-lookup never answers an error for its input (docs/decisions.md), so its
 * query parameters accept anything: the handler reads them leniently. The
 * document still shows them as the strings the provider should send.
 */
export const TrustLookupQuery = z.object(
  Object.fromEntries(
    Object.entries(TRUST_LOOKUP_FIELDS).map(([name, { description, example }]) => [
      name,
      z
        .unknown()
        .optional()
        .openapi({ type: "string", description, example, param: { name, in: "query", required: false } }),
    ]),
  ) as Record<TrustLookupField, z.ZodOptional<z.ZodUnknown>>,
);

/**
 * The POST body of trust-lookup, JSON or form. Documented only: the handler
 * parses the body itself so that even a malformed one answers `trusted: false`.
 */
export const TrustLookupBody = z
  .object(
    Object.fromEntries(
      Object.entries(TRUST_LOOKUP_FIELDS).map(([name, { description, example }]) => [
        name,
        z.string().optional().openapi({ description, example }),
      ]),
    ) as Record<TrustLookupField, z.ZodOptional<z.ZodString>>,
  )
  .openapi("TrustLookupRequest", {
    example: { number_code: "1", number: "2025550101", inbound_code: "1", inbound: "4155550100" },
  });

/** The response header naming a missing or unreadable number (docs/decisions.md, "`Lookup-Problem`"). */
export const LOOKUP_PROBLEM = "Lookup-Problem";

export const LookupProblemHeaders = z.object({
  [LOOKUP_PROBLEM]: z
    .string()
    .optional()
    .openapi({
      description:
        "Present only when the receiver or the caller was missing or unreadable: `receiver missing`, " +
        "`receiver unreadable`, `caller missing`, `caller unreadable`, two of them joined with `, `. " +
        "A well-formed number nobody holds is no problem. The answer is still `trusted: false` " +
        "(or the receiver's `user_id`); alert on this header: it means the integration sends the wrong fields.",
      example: "caller unreadable",
    }),
});

const lookupParam = (name: keyof typeof LOOKUP_FIELDS) => {
  const { description, example, required } = LOOKUP_FIELDS[name];
  const schema = z
    .string()
    .trim()
    .max(64)
    .openapi({ param: { name, in: "query" }, description, example });
  return required ? schema : schema.optional();
};

/** call-lookup takes the same parameters in the query string, validated (docs/decisions.md, "Secure calling"). */
export const CallLookupQuery = z.object({
  number_code: lookupParam("number_code"),
  number: lookupParam("number"),
  inbound_code: lookupParam("inbound_code"),
  inbound: lookupParam("inbound"),
  caller_id: lookupParam("caller_id"),
  ...Object.fromEntries(
    Object.entries(VERIFICATION_FIELDS).map(([name, { description, example }]) => [
      name,
      z
        .string()
        .trim()
        .max(64)
        .optional()
        .openapi({ param: { name, in: "query" }, description, example }),
    ]),
  ),
});

export const CallerVerificationSchema = z
  .enum(callerVerifications)
  .nullable()
  .openapi({
    description:
      "The caller's verification (STIR/SHAKEN) as the provider reported it: the attestation level `A`, `B` or `C`, " +
      "`failed` (never trusted: the number may be spoofed), `none` (not verified, or unreadable), null when the " +
      "provider sent no verification field",
    example: "A",
  });

export const TrustLookupResultSchema = z
  .object({
    trusted: z.boolean().openapi({ description: "Whether the call may ring the member's phone" }),
    user_id: int64Id().openapi({
      description: "The member holding the receiving number; 0 when none matched",
      example: 1,
    }),
    caller_verification: CallerVerificationSchema,
  })
  .openapi("TrustLookupResult");

export const CallerPersonSchema = z
  .object({
    id: int64Id(),
    first_name: z.string(),
    middle_name: z.string().nullable(),
    last_name: z.string(),
    display_name: z.string(),
    avatar: z.string().openapi({ description: "Avatar URL; empty when none" }),
    e2ee: z.boolean().openapi({ description: "Whether the person saved end-to-end encryption data" }),
    e2e_id: z.string().nullable().openapi({ description: "The person's id at the end-to-end encryption provider" }),
  })
  .openapi("CallerPerson");

export const CallLookupResultSchema = z
  .object({
    contacts: z.array(ContactSchema).openapi({ description: "The receiver's contacts with the caller's number" }),
    people: z.array(CallerPersonSchema).openapi({ description: "Platform users with the caller's number" }),
    companies: z
      .array(CompanyRefSchema)
      .openapi({ description: "Companies with the caller's number that the receiver trusts" }),
    caller_verification: CallerVerificationSchema,
  })
  .openapi("CallLookupResult");

export const SecureNumberSchema = z
  .object({
    country_code: z.string().openapi({ example: "1" }),
    number: z.string().openapi({ example: "2025550101" }),
    e164: z.string().openapi({ example: "+12025550101" }),
  })
  .openapi("SecureNumber");

const changedAt = (description: string) =>
  z
    .string()
    .nullable()
    .openapi({ description: `${description}; null when never`, format: "date-time" });

export const HeartbeatSchema = z
  .object({
    last_contact_update: changedAt("Last change to the caller's contacts"),
    last_trust_request: changedAt("Last time someone asked the caller for trust"),
    last_company_update: changedAt("Last change to a company the caller trusts, or to their company trust settings"),
    last_coworker_update: changedAt("Last change to a coworker, or a coworker joining"),
    last_user_update: changedAt("Last change to the caller's own record"),
    last_activity_id: z
      .string()
      .openapi({ description: 'Id of the newest activity involving the caller; "0" when none', example: "42" }),
    secure_number: SecureNumberSchema.nullable().openapi({
      description: "The caller's secure number; null when the pool had none to assign",
    }),
  })
  .openapi("Heartbeat");

export const BlockedCallSchema = z
  .object({
    id: int64Id().openapi({
      description: "The authenticated person's id: the person the call was blocked for, not an id of the call",
    }),
    blocked_call_id: int64Id().openapi({
      description:
        "The call's own id, unique among the person's blocked calls: the same in this list and in the stream's " +
        "`blocked_call` event, so an app can de-duplicate them; newer calls have greater ids",
    }),
    caller_id: z.string().openapi({ description: "Caller id the provider sent; empty when none" }),
    country_code: z.string().openapi({ example: "1" }),
    phone_number: z.string().openapi({ example: "4155550123" }),
    reason: z
      .enum(blockReasons)
      .nullable()
      .openapi({
        description:
          "Why the caller's verification blocked the call: `verification failed` (the number may be spoofed), " +
          "`verification required` (a trusted caller not verified at level A, in strict mode); null when the caller " +
          "is simply not trusted",
        example: null,
      }),
    created_at: z.string().openapi({ format: "date-time" }),
  })
  .openapi("BlockedCall");

const ActivityTypeSchema = z.enum(activityTypes);
const PartyTypeSchema = z.enum(partyTypes);

export const ActivityCreateSchema = z
  .object({
    type: ActivityTypeSchema,
    sendable_type: PartyTypeSchema,
    sendable_id: IdSchema,
    receivable_type: PartyTypeSchema,
    receivable_id: IdSchema,
    call_time: whenAbsent(z.number().int().min(0), 0).openapi({ description: "Call length in seconds; 0 when absent" }),
    message: z.string().min(1).max(65_536).optional().openapi({ description: "Encrypted message content" }),
    message_id: z
      .uuid()
      .optional()
      .openapi({ description: "Client-made message id; a retried POST with the same one creates nothing" }),
  })
  .superRefine((value, ctx) => {
    if (!value.type.startsWith("chat_")) return;
    for (const field of ["message", "message_id"] as const) {
      if (value[field] === undefined) {
        ctx.addIssue({ code: "custom", path: [field], message: `is required for ${value.type}` });
      }
    }
  })
  .openapi("ActivityCreate", {
    description: "`chat_*` types need `message` and `message_id`",
    // JSON Schema's if/then (OpenAPI 3.1): the rule above, as a generated client reads it.
    ...({
      if: { properties: { type: { enum: activityTypes.filter((t) => t.startsWith("chat_")) } }, required: ["type"] },
      then: {
        properties: { message: { type: "string", minLength: 1 }, message_id: { type: "string", format: "uuid" } },
        required: ["message", "message_id"],
      },
    } as object),
  });

const activityFields = {
  id: int64Id(),
  type: ActivityTypeSchema,
  sendable_id: int64Id(),
  receivable_id: int64Id(),
  call_time: z.number().int(),
  message: z.string().nullable(),
  message_id: z.string().nullable(),
  created_at: z.string().openapi({ format: "date-time" }),
};

export const ActivityCreatedSchema = z
  .object({
    success: z.literal(true),
    data: z.object({ ...activityFields, sendable_type: PartyTypeSchema, receivable_type: PartyTypeSchema }),
  })
  .openapi("ActivityCreated");

const ReadPartyTypeSchema = z.enum(["AppModelsPerson", "AppModelsCompany"]);

const PartySchema = z
  .union([
    z.object({
      id: int64Id(),
      first_name: z.string().nullable(),
      middle_name: z.string().nullable(),
      last_name: z.string().nullable(),
    }),
    z.object({ id: int64Id(), name: z.string().nullable() }),
  ])
  .nullable()
  .openapi({
    description:
      "The person (names) or company (name); null when it no longer exists. The names are null unless the party " +
      "knows the reader: a person who shares a company with them or trusted them, a company they belong to",
  });

export const ActivitySchema = z
  .object({
    ...activityFields,
    sendable_type: ReadPartyTypeSchema,
    receivable_type: ReadPartyTypeSchema,
    sendable: PartySchema,
    receivable: PartySchema,
  })
  .openapi("Activity");

/** The id is a cursor, not a resource: 0 (or any id) is fine. */
export const ActivityParams = z.object({
  id: pathId("id", "Activities with a greater id are returned; 0 for all"),
});

export const ActivityQuery = z.object({
  limit: z.coerce
    .number()
    .int()
    .min(1)
    .max(500)
    .default(100)
    .openapi({ param: { name: "limit", in: "query" }, description: "At most this many (default 100, at most 500)" }),
});

/* ---------- the live stream (docs/realtime.md) ---------- */

export const StreamQuery = z.object({
  after: z.coerce
    .number()
    .int()
    .min(0)
    .max(Number.MAX_SAFE_INTEGER)
    .optional()
    .openapi({
      param: { name: "after", in: "query" },
      description:
        "Resume: first the activity records after this id (at most 500, then a `resync` event), then live ones. " +
        "Without it, only records made after the connection opens.",
      example: 0,
    }),
  ticket: z
    .string()
    .max(200)
    .optional()
    .openapi({
      param: { name: "ticket", in: "query" },
      description:
        "For browsers, which cannot set headers on a WebSocket: a ticket from `POST /apps/buzz/stream/tickets` " +
        "(one use, 60 s), instead of the Authorization header",
    }),
});

export const StreamTicketSchema = z
  .object({
    ticket: z.string().openapi({ description: "Pass as `?ticket=` to GET /apps/buzz/stream; one use" }),
    expires_at: z.string().openapi({ format: "date-time", description: "60 s from now" }),
  })
  .openapi("StreamTicket");
