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

const ListedCompanyPhoneSchema = PlatformCompanyPhoneSchema.extend({
  belongs_to_person: z.boolean().openapi({
    description:
      "The number is now a person's (one of the platform's secure numbers, or a phone a person proved): the claim " +
      "cannot be verified (409); reject it",
    example: false,
  }),
}).openapi("ListedCompanyPhone");

export const listCompanyPhones = createRoute({
  operationId: "adminListCompanyPhones",
  method: "get",
  path: "/internal/company-phones",
  tags,
  summary: "List company phones by status (the verification queue)",
  description:
    NEEDS +
    "Every company's phones in one status (default `pending`), oldest first. Claims still pending 30 days after " +
    "they were made have expired and are not listed.",
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
    200: { ...jsonContent(z.array(ListedCompanyPhoneSchema), "One page of phones"), headers: pageHeaders },
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
    "the company. The first company verified on a number wins: the other companies' pending claims on it become " +
    "`refused`, and verifying a refused claim → 409. Verifying a verified phone changes nothing; an unknown phone, " +
    "or a claim still pending 30 days after it was made (expired) → 404.",
  security: bearerSecurity,
  middleware: [requireAdmin] as const,
  request: { params: z.object({ id: pathId("id", "Company phone id") }) },
  responses: {
    200: jsonContent(PlatformCompanyPhoneSchema, "The phone, verified"),
    ...errorResponses(401, 403, 404, 409, 429),
  },
});

export const rejectCompanyPhone = createRoute({
  operationId: "adminRejectCompanyPhone",
  method: "post",
  path: "/internal/company-phones/{id}/reject",
  tags,
  summary: "Reject a company's pending claim on a number",
  description:
    NEEDS +
    "Refuses a pending claim: it stays listed to its company as `refused` (until pruned, 30 days after it was " +
    "made), counts for nothing, and the company may claim the number again. Rejecting a refused claim changes " +
    "nothing; a verified phone → 409 (remove it with `DELETE /internal/company-phones/{id}`); unknown, or an " +
    "expired claim → 404.",
  security: bearerSecurity,
  middleware: [requireAdmin] as const,
  request: { params: z.object({ id: pathId("id", "Company phone id") }) },
  responses: {
    204: { description: "Rejected" },
    ...errorResponses(401, 403, 404, 409, 429),
  },
});

export const removeCompanyPhone = createRoute({
  operationId: "adminRemoveCompanyPhone",
  method: "delete",
  path: "/internal/company-phones/{id}",
  tags,
  summary: "Remove a company phone (verified or pending)",
  description:
    NEEDS +
    "Removes the phone from its company: from the next lookup on, calls from the number are no longer trusted " +
    "because of that company, and call-lookup no longer names it (the trust index is rewritten at once).",
  security: bearerSecurity,
  middleware: [requireAdmin] as const,
  request: { params: z.object({ id: pathId("id", "Company phone id") }) },
  responses: {
    204: { description: "Removed" },
    ...errorResponses(401, 403, 404, 429),
  },
});
