import { z } from "@hono/zod-openapi";
import { callerVerifications } from "../../domain/caller-verification";
import { int64Id } from "../../lib/ids";
import { CompanyRefSchema } from "../companies/companies.schemas";
import { ContactSchema } from "../contacts/contacts.schemas";

/*
 * The ringing path's wire shapes (docs/decisions.md, "Secure calling";
 * docs/providers.md): what trust-lookup and call-lookup take (the fields in
 * every provider's spelling, read leniently by lookup-fields.ts) and answer,
 * and the `Lookup-Problem` header. The app's other shapes are in buzz.schemas.ts.
 */

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
        "`receiver unreadable`, `caller missing`, `caller unreadable`; or when the trust index could not be " +
        "read: `index unavailable` (the call was not decided: `trusted: false`, `user_id` 0, nothing recorded; " +
        "apply your fallback). Several are joined with `, `. A well-formed number nobody holds is no problem. " +
        "The answer is still `trusted: false` (or the receiver's `user_id`); alert on this header: it means " +
        "the integration sends the wrong fields, or the platform is degraded.",
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
