import { z } from "@hono/zod-openapi";
import { CompanyParams, CompanySchema } from "../companies/companies.schemas";

export const LicenseSchema = z
  .object({
    id: z.string().openapi({ example: "protect" }),
    name: z.string().openapi({ example: "Protect" }),
    price: z.number().int().openapi({ description: "Per seat, in minor units (cents)", example: 9900 }),
    currency: z.string().openapi({ example: "USD" }),
    num_active: z.number().int().openapi({ description: "Seats the company bought", example: 5 }),
    num_assigned: z.number().int().openapi({ description: "Seats held by employees", example: 1 }),
    num_available: z.number().int().openapi({ description: "num_active - num_assigned", example: 4 }),
    full_scan: z.boolean(),
    full_delete: z.boolean(),
    sites: z.array(CompanySchema).openapi({ description: "The people-search sites the license covers" }),
  })
  .openapi("License");

export const PurchaseSchema = z
  .array(
    z
      .object({
        id: z.string().trim().min(1).max(100).openapi({ description: "License id (or name)", example: "protect" }),
        quantity: z.number().int().min(1).max(10_000).openapi({ description: "Seats to add, 1–10 000", example: 3 }),
      })
      .openapi("PurchaseLicense"),
  )
  .min(1)
  .max(100)
  .openapi("PurchaseLicenses");

/** License ids are strings ("scan") although the seed declares an integer (docs/decisions.md). */
const licenseId = z
  .string()
  .min(1)
  .max(100)
  .openapi({ param: { name: "id", in: "path", required: true }, description: "License id (or name)", example: "scan" });

export const LicenseParams = z.object({ id: licenseId });
export const CompanyLicenseParams = CompanyParams.extend({ id: licenseId });
