import { createRoute, z } from "@hono/zod-openapi";
import { bearerSecurity, errorResponses, jsonContent } from "../../lib/openapi";
import { companyAccess } from "../../middleware/company-access";
import { CompanyParams } from "./companies.schemas";
import { CompanyPhoneInputSchema, CompanyPhoneParams, CompanyPhoneSchema } from "./phones.schemas";
import { IdempotencyHeaders, idempotent, replayedHeader } from "../../middleware/idempotency";

const tags = ["Companies"];

export const listCompanyPhones = createRoute({
  operationId: "listCompanyPhones",
  method: "get",
  path: "/companies/{company_id}/phones",
  tags,
  summary: "List the numbers the company calls from",
  description: "Needs `read settings`. Calls from these numbers are trusted by the members' secure numbers.",
  security: bearerSecurity,
  middleware: [companyAccess("read settings")] as const,
  request: { params: CompanyParams },
  responses: {
    200: jsonContent(z.array(CompanyPhoneSchema), "The company's phones, oldest first"),
    ...errorResponses(401, 403, 404, 429),
  },
});

export const addCompanyPhone = createRoute({
  operationId: "addCompanyPhone",
  method: "post",
  path: "/companies/{company_id}/phones",
  tags,
  summary: "Add a number the company calls from",
  description:
    "Needs `write settings`. The number is parsed like an employee's phone and starts `pending`: once the " +
    "platform operator verifies it, the members' secure numbers trust calls from it (unless a member set the " +
    "company to `negative`). Several companies may claim one number; the first verified wins. The same number " +
    "twice in one company, or a number another company's phone is verified for, is 409; a company may have 20 " +
    "claims pending at once (400 beyond), and a claim still pending after 30 days expires.",
  security: bearerSecurity,
  middleware: [companyAccess("write settings"), idempotent("company")] as const,
  request: {
    params: CompanyParams,
    headers: IdempotencyHeaders,
    body: { content: { "application/json": { schema: CompanyPhoneInputSchema } }, required: true },
  },
  responses: {
    201: { ...jsonContent(CompanyPhoneSchema, "The phone added"), headers: replayedHeader },
    ...errorResponses(400, 401, 403, 404, 409, 413, 422, 429),
  },
});

export const removeCompanyPhone = createRoute({
  operationId: "removeCompanyPhone",
  method: "delete",
  path: "/companies/{company_id}/phones/{id}",
  tags,
  summary: "Remove a company phone",
  description: "Needs `write settings`. Calls from the number are no longer trusted for the company's sake.",
  security: bearerSecurity,
  middleware: [companyAccess("write settings")] as const,
  request: { params: CompanyPhoneParams },
  responses: {
    204: { description: "Removed" },
    ...errorResponses(401, 403, 404, 429),
  },
});
