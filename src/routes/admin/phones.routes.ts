import { createRoute, z } from "@hono/zod-openapi";
import { companyPhoneStatuses } from "../../db/schema";
import { pathId, int64Id } from "../../lib/ids";
import { bearerSecurity, errorResponses, jsonContent } from "../../lib/openapi";
import { pageHeaders, pageQuery } from "../../lib/pagination";
import { requireAuth } from "../../middleware/auth";
import { CompanyPhoneSchema } from "../companies/phones.schemas";

/*
 * The operator's review of company phones (docs/decisions.md, "Company
 * phones"): a phone a company adds is pending until verified here.
 */

const tags = ["Platform admin"];
const requireAdmin = requireAuth({ scope: "platform:admin" });
const NEEDS = "Needs a service token with scope `platform:admin` (the operator; `npm run admin`). ";

const PlatformCompanyPhoneSchema = CompanyPhoneSchema.extend({
  company_id: int64Id().openapi({ description: "The company that added the number", example: 1 }),
}).openapi("PlatformCompanyPhone");

export const listCompanyPhones = createRoute({
  operationId: "adminListCompanyPhones",
  method: "get",
  path: "/internal/company-phones",
  tags,
  summary: "List company phones by status (the verification queue)",
  description: NEEDS + "Every company's phones in one status (default `pending`), oldest first.",
  security: bearerSecurity,
  middleware: [requireAdmin] as const,
  request: {
    query: pageQuery(100, 1000).extend({
      status: z
        .enum(companyPhoneStatuses)
        .default("pending")
        .openapi({ param: { name: "status", in: "query" }, example: "pending" }),
    }),
  },
  responses: {
    200: { ...jsonContent(z.array(PlatformCompanyPhoneSchema), "One page of phones"), headers: pageHeaders },
    ...errorResponses(400, 401, 403, 429),
  },
});

export const verifyCompanyPhone = createRoute({
  operationId: "adminVerifyCompanyPhone",
  method: "post",
  path: "/internal/company-phones/{id}/verify",
  tags,
  summary: "Verify a company phone",
  description:
    NEEDS +
    "Confirms the company really calls from this number: from the next lookup on (within 60 s everywhere), calls " +
    "from it are trusted by the company's members and by everyone who trusts the company, and call-lookup names " +
    "the company. Verifying a verified phone changes nothing.",
  security: bearerSecurity,
  middleware: [requireAdmin] as const,
  request: { params: z.object({ id: pathId("id", "Company phone id") }) },
  responses: {
    200: jsonContent(PlatformCompanyPhoneSchema, "The phone, verified"),
    ...errorResponses(401, 403, 404, 429),
  },
});
