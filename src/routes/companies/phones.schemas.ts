import { z } from "@hono/zod-openapi";
import { companyPhoneStatuses } from "../../db/schema";
import { pathId, int64Id } from "../../lib/ids";
import { PhoneInputSchema } from "../employees/employee-input.schemas";
import { CompanyParams } from "./companies.schemas";

export const CompanyPhoneSchema = z
  .object({
    id: int64Id().openapi({ example: 1 }),
    country_code: z.string().openapi({ description: "Calling code, digits", example: "1" }),
    phone_number: z.string().openapi({ description: "National number, digits", example: "4155550100" }),
    phone_full: z.string().openapi({ description: "E.164", example: "+14155550100" }),
    label: z
      .string()
      .nullable()
      .openapi({ description: "What the number is for; null when none", example: "Front desk" }),
    status: z.enum(companyPhoneStatuses).openapi({
      description:
        "`pending` until the platform operator verifies the number; only a `verified` phone makes calls from it " +
        "trusted or names the company in call-lookup. `refused`: the operator rejected the claim, or another " +
        "company's claim on the number was verified first (the company may claim it again). A claim still " +
        "pending after 30 days has expired and is no longer listed.",
      example: "verified",
    }),
  })
  .openapi("CompanyPhone");

/** Parsed like an employee's phone (calling code + national number, or `phone_full`), plus a label. */
export const CompanyPhoneInputSchema = z
  .object({ label: z.string().trim().max(100).nullable().optional().openapi({ example: "Front desk" }) })
  .and(PhoneInputSchema)
  .openapi("CompanyPhoneInput");

export const CompanyPhoneParams = CompanyParams.extend({ id: pathId("id", "Company phone id") });
