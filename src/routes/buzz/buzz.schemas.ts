import { z } from "@hono/zod-openapi";
import { activityTypes, partyTypes } from "../../db/schema";
import { blockReasons } from "../../domain/caller-verification";
import { IdSchema, pathId, int64Id } from "../../lib/ids";
import { queryAfterId, queryInteger } from "../../lib/pagination";
import { whenAbsent } from "../../lib/openapi";

/*
 * The secure-calling app's wire shapes: its secure number, heartbeat, blocked
 * calls, activity and stream. What the provider's lookups take and answer is
 * in lookup.schemas.ts.
 */

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
  limit: queryInteger(
    "limit",
    { min: 1, max: 500, fallback: 100 },
    "At most this many (default 100, at most 500)",
    100,
  ),
});

/* ---------- the live stream (docs/realtime.md) ---------- */

export const StreamQuery = z.object({
  after: queryAfterId(
    "Resume: first the activity records after this id (at most 500, then a `resync` event), then live ones. " +
      "Without it, only records made after the connection opens.",
    0,
  ),
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
