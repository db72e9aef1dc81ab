import { z } from "@hono/zod-openapi";
import { pathId, int64Id } from "../../lib/ids";
import { CompanyRefSchema } from "../companies/companies.schemas";

/** `"trusted"`, `"negative"`, or null for no setting (membership rules apply). */
export const TrustSettingSchema = z
  .enum(["trusted", "negative"])
  .nullable()
  .openapi({ description: "`negative` overrides membership; null removes the setting", example: "trusted" });

export const TrustSettingInputSchema = z.object({ trust: TrustSettingSchema }).openapi("TrustSettingInput");

export const CompanyTrustSchema = z
  .object({
    company: CompanyRefSchema,
    trust: TrustSettingSchema,
    member: z.boolean().openapi({ description: "Whether the caller belongs to the company" }),
  })
  .openapi("CompanyTrust");

export const CompanyTrustResultSchema = z
  .object({ company_id: int64Id().openapi({ example: 8 }), trust: TrustSettingSchema })
  .openapi("CompanyTrustResult");

export const TrustCompanyParams = z.object({ company_id: pathId("company_id", "Company id") });
