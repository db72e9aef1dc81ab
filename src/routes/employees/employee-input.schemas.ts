// The employees area's input: the bodies of POST, POST /bulk and PUT, standardized at the edge; its
// field helpers (Name, OptionalText, primaryList) serve these three only. The rest of the area's
// schemas (paths, queries, the Person and Exposure bodies) are in employees.schemas.ts.
import { z } from "@hono/zod-openapi";
import { EmailAddress } from "../../lib/email";
import { atLeastOneOf, whenAbsent } from "../../lib/openapi";
import {
  CALLING_CODE_PATTERN,
  INTERNATIONAL_PHONE_PATTERN,
  NATIONAL_NUMBER_PATTERN,
  isCountryCode,
  normalizeCallingCode,
  phoneFromInternational,
  phoneFromParts,
} from "../../lib/phone";
import { CalendarDate } from "../../lib/time";
import { usStateCode } from "../../lib/us-states";
import {
  MAX_BULK_EMPLOYEES,
  type AddressInput,
  type EmployeeChanges,
  type NewEmployee,
  type PhoneInput,
} from "../../domain/employees";

/*
 * Input is standardized here, at the edge (docs/decisions.md, "Employees and exposures"),
 * so a 400 names the offending field (`addresses[0].region`) and the service
 * receives clean values in the domain's shapes (src/domain/employees.ts):
 * emails trimmed and lowercased, countries as uppercase ISO alpha-2, US
 * states as USPS codes, phones as E.164.
 */

const MAX_ENTRIES = 20;

const Name = z.string().trim().min(1).max(100);

/** Optional text: `undefined` stays absent (PUT: unchanged), blank becomes null. */
const OptionalText = (max: number) =>
  z
    .string()
    .trim()
    .max(max)
    .nullable()
    .optional()
    .transform((value) => (value === undefined ? undefined : value || null));

const Primary = z
  .boolean()
  .optional()
  .openapi({ description: "Exactly one entry per list is primary; when none is marked, the first is" });

const Dob = CalendarDate.refine((date) => date >= "1900-01-01" && date < new Date().toISOString().slice(0, 10), {
  message: "must be a real date in the past",
}).openapi({
  description:
    "Date of birth, YYYY-MM-DD: a real date from 1900-01-01 to yesterday (UTC); today or later is 400 " +
    "(JSON Schema cannot compare with today, so the `pattern` only bounds the year to 1900–2099)",
  pattern: String.raw`^(?:19|20)[0-9]{2}-[0-9]{2}-[0-9]{2}$`,
  example: "1988-04-12",
});

const EmailInput = z.object({ primary: Primary, email: EmailAddress }).openapi("EmailInput");

const AkaInput = z
  .object({ first_name: Name, middle_name: OptionalText(100), last_name: OptionalText(100) })
  .transform((aka) => ({
    firstName: aka.first_name,
    middleName: aka.middle_name ?? null,
    lastName: aka.last_name ?? null,
  }))
  .openapi("AkaInput");

export const PhoneInputSchema = z
  .object({
    primary: Primary,
    country_code: z.union([z.string(), z.number().int()]).transform(String).optional().openapi({
      description:
        'Calling code: "1", "+1" or the country "US" (case-insensitive); one that exists (else 400, as is "")',
      example: "1",
      type: "string",
      minLength: 1,
      pattern: CALLING_CODE_PATTERN,
    }),
    phone_number: z
      .string()
      .max(32)
      .optional()
      .openapi({
        description:
          "National number: digits, optionally with `+()-.` and blanks; a valid number for `country_code` " +
          '(else 400: "" and, under most calling codes, all zeros)',
        example: "4155550123",
        minLength: 1,
        pattern: NATIONAL_NUMBER_PATTERN,
      }),
    phone_full: z
      .string()
      .max(40)
      .optional()
      .openapi({
        description:
          "International form (`+` and the calling code), a valid number; computed when omitted or blank, checked when given",
        example: "+14155550123",
        pattern: String.raw`^\s*$|` + INTERNATIONAL_PHONE_PATTERN,
      }),
  })
  .transform((input, ctx): PhoneInput => {
    const full = input.phone_full?.trim() ? phoneFromInternational(input.phone_full) : null;
    if (input.phone_full?.trim() && !full) {
      ctx.addIssue({ code: "custom", path: ["phone_full"], message: "is not a valid international phone number" });
      return z.NEVER;
    }
    if (input.country_code === undefined && input.phone_number === undefined) {
      if (full) return { primary: input.primary ?? false, ...full };
      ctx.addIssue({ code: "custom", message: "needs `country_code` and `phone_number`, or `phone_full`" });
      return z.NEVER;
    }
    if (input.country_code === undefined || normalizeCallingCode(input.country_code) === null) {
      ctx.addIssue({
        code: "custom",
        path: ["country_code"],
        message: 'must be a calling code ("1", "+1") or a two-letter country ("US")',
      });
      return z.NEVER;
    }
    const phone = phoneFromParts(input.country_code, input.phone_number ?? "");
    if (!phone) {
      ctx.addIssue({
        code: "custom",
        path: ["phone_number"],
        message: `is not a valid phone number for calling code ${input.country_code}`,
      });
      return z.NEVER;
    }
    if (full && full.e164 !== phone.e164) {
      ctx.addIssue({ code: "custom", path: ["phone_full"], message: `does not match ${phone.e164}` });
      return z.NEVER;
    }
    return { primary: input.primary ?? false, ...phone };
  })
  .openapi("PhoneInput", {
    description: "`country_code` and `phone_number`, or `phone_full` (both forms: they must agree)",
    // Without the parts, a blank `phone_full` is no number at all (400).
    anyOf: [
      { required: ["country_code", "phone_number"] },
      { required: ["phone_full"], properties: { phone_full: { pattern: INTERNATIONAL_PHONE_PATTERN } } },
    ],
  });

const AddressInputSchema = z
  .object({
    primary: Primary,
    line_1: z.string().trim().min(1).max(200),
    line_2: OptionalText(200),
    city: z.string().trim().min(1).max(100),
    region: whenAbsent(z.string().trim().max(100), "").openapi({
      description: "State or region; in the US a state name or its two-letter code; empty when absent",
      example: "CA",
    }),
    postal_code: whenAbsent(z.string().trim().max(20), "").openapi({
      description: "Empty when absent",
      example: "94105",
    }),
    country: z
      .string()
      .trim()
      .toUpperCase()
      .refine(isCountryCode, {
        message: "must be an ISO 3166-1 alpha-2 country code such as US",
      })
      .openapi({
        description:
          "ISO 3166-1 alpha-2 country code, case-insensitive, one the server's phone metadata knows (every " +
          "assigned code; else 400)",
        pattern: String.raw`^\s*[A-Za-z]{2}\s*$`,
        example: "US",
      }),
  })
  .transform((input, ctx): AddressInput => {
    const collapse = (text: string) => text.replace(/\s+/g, " ");
    let { region, postal_code: postalCode } = input;
    if (input.country === "US") {
      const state = usStateCode(region);
      if (!state)
        ctx.addIssue({ code: "custom", path: ["region"], message: "must be a US state or its two-letter code" });
      const zip = /^([0-9]{5})(?:-?([0-9]{4}))?$/.exec(postalCode);
      if (!zip)
        ctx.addIssue({ code: "custom", path: ["postal_code"], message: "must be a US ZIP code (12345 or 12345-6789)" });
      if (!state || !zip) return z.NEVER;
      region = state;
      postalCode = zip[2] ? `${zip[1]}-${zip[2]}` : zip[1]!;
    }
    return {
      primary: input.primary ?? false,
      line1: collapse(input.line_1),
      line2: input.line_2 ? collapse(input.line_2) : null,
      city: collapse(input.city),
      region: collapse(region),
      postalCode: postalCode.toUpperCase(),
      country: input.country,
    };
  })
  .openapi("AddressInput");

/**
 * A list with exactly one primary entry (docs/decisions.md): none marked → the
 * first; two marked → 400. `key` finds duplicates (also a 400).
 */
function primaryList<T extends z.ZodType<{ primary?: boolean }>>(
  item: T,
  min: number,
  key: (entry: z.output<T>) => string,
  what: string,
) {
  return z
    .array(item)
    .min(min)
    .max(MAX_ENTRIES)
    .transform((entries, ctx) => {
      const marked = entries.flatMap((entry, i) => (entry.primary ? [i] : []));
      if (marked.length > 1) {
        ctx.addIssue({
          code: "custom",
          path: [marked[1]!, "primary"],
          message: `only one entry may be primary (entry ${marked[0]} already is)`,
        });
        return z.NEVER;
      }
      const seen = new Map<string, number>();
      for (const [i, entry] of entries.entries()) {
        const k = key(entry);
        if (seen.has(k)) {
          ctx.addIssue({ code: "custom", path: [i], message: `repeats ${what} ${k} of entry ${seen.get(k)}` });
          return z.NEVER;
        }
        seen.set(k, i);
      }
      return entries.map((entry, i) => ({ ...entry, primary: marked.length ? marked[0] === i : i === 0 }));
    });
}

const Emails = primaryList(EmailInput, 1, (entry) => entry.email, "the email");
const Phones = primaryList(PhoneInputSchema, 0, (entry) => entry.e164, "the number");
const Addresses = primaryList(
  AddressInputSchema,
  0,
  (a) => [a.line1, a.line2, a.city, a.region, a.postalCode, a.country].join("|").toLowerCase(),
  "the address",
);
const Akas = z.array(AkaInput).max(MAX_ENTRIES);
const Roles = z
  .array(z.string().trim().min(1).max(100))
  .max(MAX_ENTRIES)
  .openapi({ description: "Role names of the company (GET /companies/{company_id}/roles)", example: ["HR"] });
const LicenseRef = z
  .string()
  .trim()
  .min(1)
  .max(100)
  .nullable()
  .openapi({ description: "License id or name, case-insensitive; null for none", example: "scan" });

export const CreateEmployeeSchema = z
  .object({
    first_name: Name.openapi({ example: "Dana" }),
    middle_name: OptionalText(100),
    last_name: Name.openapi({ example: "Scully" }),
    emails: Emails,
    dob: Dob,
    akas: whenAbsent(Akas, []).openapi({ description: "Other names; none when absent" }),
    phone_numbers: whenAbsent(Phones.nullable(), null).openapi({ description: "None when absent or null" }),
    addresses: Addresses,
    roles: whenAbsent(Roles, ["HR"]).openapi({
      description: 'Role names of the company (GET /companies/{company_id}/roles); `["HR"]` when absent',
      example: ["HR"],
    }),
    license: whenAbsent(LicenseRef, "scan").openapi({
      description: "License id or name, case-insensitive; null for none; `scan` when absent",
      example: "scan",
    }),
    invite: whenAbsent(z.boolean(), false).openapi({
      description:
        "Send a login invitation email to the primary email (after the answer, once): it names the company and " +
        "tells the person to sign in to the app with that address; false when absent",
    }),
    ephemeral: whenAbsent(z.boolean(), false).openapi({
      description: "Remove the employee 24 hours after creation; false when absent",
    }),
  })
  .transform((body): NewEmployee => ({
    firstName: body.first_name,
    middleName: body.middle_name ?? null,
    lastName: body.last_name,
    dob: body.dob,
    emails: body.emails,
    akas: body.akas,
    phones: body.phone_numbers ?? [],
    addresses: body.addresses,
    roles: body.roles,
    license: body.license,
    invite: body.invite,
    ephemeral: body.ephemeral,
  }))
  .openapi("CreateEmployee");

/**
 * POST /employees/bulk: 1–1,000 bodies of POST /employees, each checked and
 * standardized by the same schema (a 400 names `[i].field`). An email may
 * appear once in the whole batch.
 */
export const BulkCreateEmployeesSchema = z
  .array(CreateEmployeeSchema)
  .min(1, `must hold 1 to ${MAX_BULK_EMPLOYEES.toLocaleString("en-US")} employees`)
  .max(MAX_BULK_EMPLOYEES, `must hold 1 to ${MAX_BULK_EMPLOYEES.toLocaleString("en-US")} employees`)
  .superRefine((employees, ctx) => {
    const seen = new Map<string, number>();
    employees.forEach((employee, i) =>
      employee.emails.forEach((entry, j) => {
        const earlier = seen.get(entry.email);
        if (earlier === undefined) return void seen.set(entry.email, i);
        ctx.addIssue({
          code: "custom",
          path: [i, "emails", j, "email"],
          message: `repeats ${entry.email} of element [${earlier}]; an email belongs to one person`,
        });
      }),
    );
  })
  .openapi({ description: "1 to 1,000 employees, each as POST /companies/{company_id}/employees takes it" });

/** The fields a PUT may change (`email` is another spelling of `emails`). */
const EMPLOYEE_CHANGES = [
  "first_name",
  "middle_name",
  "last_name",
  "emails",
  "dob",
  "akas",
  "phone_numbers",
  "addresses",
  "roles",
  "license",
] as const;

export const UpdateEmployeeSchema = z
  .object({
    first_name: Name.optional(),
    middle_name: OptionalText(100),
    last_name: Name.optional(),
    email: Emails.optional().openapi({ description: "Same as `emails`" }),
    emails: Emails.optional().openapi({
      description: "Replaces the emails this company manages for the person; their own emails stay",
    }),
    dob: Dob.optional(),
    akas: Akas.optional(),
    phone_numbers: Phones.optional(),
    addresses: Addresses.optional(),
    roles: Roles.optional(),
    license: LicenseRef.optional(),
  })
  .transform((body, ctx): EmployeeChanges => {
    if (body.email && body.emails) {
      ctx.addIssue({ code: "custom", path: ["email"], message: "give `email` or `emails`, not both" });
      return z.NEVER;
    }
    const changes: EmployeeChanges = {
      firstName: body.first_name,
      middleName: body.middle_name,
      lastName: body.last_name,
      emails: body.emails ?? body.email,
      dob: body.dob,
      akas: body.akas,
      phones: body.phone_numbers,
      addresses: body.addresses,
      roles: body.roles,
      license: body.license,
    };
    if (Object.values(changes).every((value) => value === undefined)) {
      ctx.addIssue({ code: "custom", message: `names no field to change (${EMPLOYEE_CHANGES.join(", ")})` });
      return z.NEVER;
    }
    return changes;
  })
  .openapi("UpdateEmployee", {
    description: "At least one field; `email` and `emails` are the same field, so not both",
    ...atLeastOneOf([...EMPLOYEE_CHANGES, "email"]),
    not: { properties: { email: { type: "array" }, emails: { type: "array" } }, required: ["email", "emails"] },
  });
