import { createRoute, z } from "@hono/zod-openapi";
import { bearerSecurity, errorResponses, jsonContent } from "../../lib/openapi";
import { requirePerson } from "../../middleware/auth";
import {
  CompanyTrustResultSchema,
  CompanyTrustSchema,
  TrustCompanyParams,
  TrustSettingInputSchema,
} from "./company-trust.schemas";

const tags = ["Contacts"];

export const listCompanyTrust = createRoute({
  operationId: "listCompanyTrust",
  method: "get",
  path: "/contacts/companies",
  tags,
  summary: "The caller's trust in companies",
  description:
    "Every company the caller belongs to or has a trust setting for, by company id. The setting decides " +
    "whether calls from the company's phones are trusted, and is the vendor trust the consent container reports.",
  security: bearerSecurity,
  middleware: [requirePerson] as const,
  responses: {
    200: jsonContent(z.array(CompanyTrustSchema), "The caller's companies and settings"),
    ...errorResponses(401, 403, 429),
  },
});

export const setCompanyTrust = createRoute({
  operationId: "setCompanyTrust",
  method: "put",
  path: "/contacts/companies/{company_id}/trust",
  tags,
  summary: "Set the caller's trust in a company",
  description:
    "`trusted`: calls from the company's phones are trusted; `negative`: never, even for a member; " +
    "null removes the setting (membership decides again). Seen by the next trust-lookup and container load.",
  security: bearerSecurity,
  middleware: [requirePerson] as const,
  request: {
    params: TrustCompanyParams,
    body: { content: { "application/json": { schema: TrustSettingInputSchema } }, required: true },
  },
  responses: {
    200: jsonContent(CompanyTrustResultSchema, "The setting saved"),
    ...errorResponses(400, 401, 403, 404, 413, 429),
  },
});
