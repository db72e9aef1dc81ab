import { createRoute, z } from "@hono/zod-openapi";
import { bearerSecurity, errorResponses, jsonContent } from "../../lib/openapi";
import type { Permission } from "../../lib/permissions";
import { companyAccess, soleCompanyAccess } from "../../middleware/company-access";
import { CompanyParams } from "../companies/companies.schemas";
import { CompanyLicenseParams, LicenseParams, LicenseSchema, PurchaseSchema } from "./licenses.schemas";
import { IdempotencyHeaders, idempotent, replayedHeader } from "../../middleware/idempotency";
import { ConditionalHeaders, conditionalRead, notModified, withETag } from "../../middleware/conditional";

const tags = ["Licenses"];

/**
 * Every license route is served at `/companies/{company_id}/licenses…` and at
 * `/licenses…`, which acts on the caller's company when they belong to
 * exactly one (else 400) (docs/decisions.md). One factory per route keeps both
 * forms identical.
 */
const access = (scoped: boolean, permission: Permission) =>
  scoped ? companyAccess(permission) : soleCompanyAccess(permission, "/companies/{company_id}/licenses");

const soleNote = (scoped: boolean) =>
  scoped
    ? ""
    : " Acts on the caller's company; a caller in several companies (or none) gets 400 and uses `/companies/{company_id}/licenses`.";

const listAt = (scoped: boolean) =>
  createRoute({
    method: "get",
    operationId: scoped ? "listCompanyLicenses" : "listLicenses",
    path: scoped ? "/companies/{company_id}/licenses" : "/licenses",
    tags,
    summary: "List the licenses with the company's seats",
    description: `Needs \`read licenses\`. The whole catalog, cheapest first, with the company's seat counts (zero when none bought); no pagination.${soleNote(scoped)}`,
    security: bearerSecurity,
    middleware: [access(scoped, "read licenses"), conditionalRead] as const,
    request: { headers: ConditionalHeaders, params: scoped ? CompanyParams : z.object({}) },
    responses: {
      200: withETag(jsonContent(z.array(LicenseSchema), "Every license")),
      ...notModified,
      ...errorResponses(400, 401, 403, 404, 429),
    },
  });

const getAt = (scoped: boolean) =>
  createRoute({
    method: "get",
    operationId: scoped ? "getCompanyLicense" : "getLicense",
    path: scoped ? "/companies/{company_id}/licenses/{id}" : "/licenses/{id}",
    tags,
    summary: "Read one license with the company's seats",
    description: `Needs \`read licenses\`. The id is matched case-insensitively, also against the name.${soleNote(scoped)}`,
    security: bearerSecurity,
    middleware: [access(scoped, "read licenses"), conditionalRead] as const,
    request: { headers: ConditionalHeaders, params: scoped ? CompanyLicenseParams : LicenseParams },
    responses: {
      200: withETag(jsonContent(LicenseSchema, "The license")),
      ...notModified,
      ...errorResponses(400, 401, 403, 404, 429),
    },
  });

const purchaseAt = (scoped: boolean) =>
  createRoute({
    method: "post",
    operationId: scoped ? "purchaseCompanyLicenses" : "purchaseLicenses",
    path: scoped ? "/companies/{company_id}/licenses" : "/licenses",
    tags,
    summary: "Buy seats",
    description: `Needs \`write licenses\`. Adds each quantity (1–10 000) to the company's seats; an unknown id is a 400 and nothing is bought. Answers with all the company's licenses.${soleNote(scoped)}`,
    security: bearerSecurity,
    middleware: [access(scoped, "write licenses"), idempotent("company")] as const,
    request: {
      params: scoped ? CompanyParams : z.object({}),
      headers: IdempotencyHeaders,
      body: { required: true, content: { "application/json": { schema: PurchaseSchema } } },
    },
    responses: {
      201: {
        ...jsonContent(z.array(LicenseSchema), "The company's licenses after the purchase"),
        headers: replayedHeader,
      },
      ...errorResponses(400, 401, 403, 404, 409, 413, 422, 429),
    },
  });

export const listLicenses = listAt(false);
export const getLicense = getAt(false);
export const purchaseLicenses = purchaseAt(false);
export const listCompanyLicenses = listAt(true);
export const getCompanyLicense = getAt(true);
export const purchaseCompanyLicenses = purchaseAt(true);
