// The employees area's paths, queries and bodies (the Person, the Exposure and its history; the
// webhook payloads reuse the first two). The request bodies are in employee-input.schemas.ts.
import { z } from "@hono/zod-openapi";
import { pathId, int64Id } from "../../lib/ids";
import { pageQuery, queryAfterId } from "../../lib/pagination";
import { QueryTimestamp } from "../../lib/time";
import { exposureStatuses } from "../../db/schema";
import { CompanyParams, CompanyRefSchema } from "../companies/companies.schemas";

export const EmployeeParams = CompanyParams.extend({ id: pathId("id", "Employee (person) id") });
export const ExposureParams = CompanyParams.extend({ id: pathId("id", "Exposure id") });

const employeePages = pageQuery(100, 1000);
export const EmployeeListQuery = employeePages.extend({
  page: employeePages.shape.page.openapi({
    description: "Page number, from 1; with `after`, only 1 (another page with `after` is 400)",
  }),
  search: z
    .string()
    .trim()
    .toLowerCase()
    .max(254)
    .optional()
    .openapi({
      param: { name: "search", in: "query" },
      description: "Only employees with an email starting with this (case-insensitive)",
      example: "dana",
    }),
  after: queryAfterId(
    "Keyset paging: only employees with an id greater than this (the last id of the page before). Only with `page` 1 or no `page` (another page is 400: JSON Schema cannot tie two parameters). It reads no page before it, however deep; the `Link` header's `next` carries it once a request uses it",
    1042,
  ),
});

/** A comma-separated list in a query string, each item checked by `parse`. */
function commaList<T>(name: string, parse: (item: string) => T | null, expected: string) {
  return z
    .string()
    .optional()
    .transform((value, ctx) => {
      if (value === undefined || value.trim() === "") return null;
      const items: T[] = [];
      for (const raw of value.split(",")) {
        const item = parse(raw.trim());
        if (item === null) {
          ctx.addIssue({ code: "custom", message: `${JSON.stringify(raw.trim())} is not ${expected}` });
          return z.NEVER;
        }
        items.push(item);
      }
      return [...new Set(items)];
    })
    .openapi({ param: { name, in: "query" }, type: "string" });
}

export const ExposureListQuery = pageQuery(100, 1000).extend({
  since: QueryTimestamp.optional().openapi({
    param: { name: "since", in: "query" },
    description: "Only exposures created or changed at or after this time (UTC)",
  }),
  employees: commaList(
    "employees",
    (item) => (/^[0-9]{1,15}$/.test(item) && Number(item) > 0 ? Number(item) : null),
    "an employee id",
  ).openapi({
    description: "Comma-separated employee ids (positive, up to 15 digits)",
    pattern: "^\\s*$|^\\s*[0-9]{1,15}\\s*(?:,\\s*[0-9]{1,15}\\s*)*$",
    example: "12,15",
  }),
  status: commaList(
    "status",
    (item) =>
      (exposureStatuses as readonly string[]).includes(item) ? (item as (typeof exposureStatuses)[number]) : null,
    "one of pending, in_progress, closed",
  ).openapi({
    description: "One or more of pending, in_progress, closed, comma-separated",
    pattern: `^\\s*$|^\\s*(?:${exposureStatuses.join("|")})\\s*(?:,\\s*(?:${exposureStatuses.join("|")})\\s*)*$`,
    example: "pending",
  }),
  exposed: z
    .enum(["true", "false", "1", "0"], { error: "must be true or false" })
    .optional()
    .transform((value) => (value === undefined ? undefined : value === "true" || value === "1"))
    .openapi({
      param: { name: "exposed", in: "query" },
      description:
        "true keeps only current exposures (pending, in_progress). Default true, unless `status` is given: then the statuses named decide",
      example: "true",
    }),
});

export const PersonBodySchema = z
  .object({
    id: int64Id().openapi({ example: 12 }),
    first_name: z.string(),
    middle_name: z.string().nullable(),
    last_name: z.string(),
    display_name: z.string().openapi({ description: "Full name" }),
    dob: z.string().nullable().openapi({ description: "YYYY-MM-DD" }),
    akas: z.array(
      z.object({
        id: int64Id(),
        first_name: z.string(),
        middle_name: z.string().nullable(),
        last_name: z.string().nullable(),
      }),
    ),
    addresses: z.array(
      z.object({
        id: int64Id(),
        primary: z.boolean(),
        line_1: z.string(),
        line_2: z.string().nullable(),
        city: z.string(),
        region: z.string(),
        postal_code: z.string(),
        country: z.string(),
      }),
    ),
    emails: z.array(z.object({ id: int64Id(), primary: z.boolean(), email: z.string() })),
    phone_numbers: z.array(
      z.object({
        id: int64Id(),
        primary: z.boolean(),
        country_code: z.string().openapi({ description: "Calling code, digits", example: "1" }),
        phone_number: z.string().openapi({ description: "National number, digits", example: "4155550123" }),
        phone_full: z.string().openapi({ description: "E.164", example: "+14155550123" }),
      }),
    ),
    last_scan_at: z.string().nullable(),
    license: z
      .object({
        type: z.string().openapi({ description: "License id", example: "scan" }),
        price: z.number().int().openapi({ description: "Cents" }),
        start_date: z.string().nullable(),
        end_date: z.string().nullable(),
        renews: z.union([z.literal(0), z.literal(1)]),
        prorate_on_renewal: z.union([z.literal(0), z.literal(1)]),
      })
      .nullable(),
    roles: z.array(z.string()),
    risk_score: z.number().int(),
    exposures: z.object({
      total: z.number().int().openapi({ description: "pending + in_progress + closed" }),
      pending: z.number().int(),
      in_progress: z.number().int(),
      closed: z.number().int(),
      not_found: z.number().int().openapi({ description: "Sites scanned where nothing was found" }),
    }),
    last_login: z.string().nullable(),
    created_at: z.string(),
  })
  .openapi("Person");

export const ExposureSchema = z
  .object({
    id: int64Id(),
    employee_id: int64Id(),
    status: z.enum(exposureStatuses),
    site: CompanyRefSchema,
    url: z.string().nullable().openapi({ description: "The listing found" }),
    data: z.record(z.string(), z.unknown()).openapi({ description: "What the scan found" }),
    created_at: z.string(),
    updated_at: z.string(),
  })
  .openapi("Exposure");

export const HistoryEntrySchema = z
  .object({
    event: z.string().openapi({ example: "Found on PeopleFinder" }),
    company: CompanyRefSchema.openapi({ description: "The site acted upon" }),
    when: z.string(),
  })
  .openapi("ExposureHistoryEntry");
