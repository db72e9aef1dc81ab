import { createRoute, z } from "@hono/zod-openapi";
import { companyAccess } from "../../middleware/company-access";
import { bearerSecurity, errorResponses, jsonContent } from "../../lib/openapi";
import { CompanyParams, CompanySchema, RoleSchema, SiteParams } from "./companies.schemas";
import { ConditionalHeaders, conditionalRead, notModified, withETag } from "../../middleware/conditional";

const tags = ["Companies"];

export const getCompany = createRoute({
  method: "get",
  operationId: "getCompany",
  path: "/companies/{company_id}",
  tags,
  summary: "Read the caller's company",
  description: "Needs `read settings` in that company.",
  security: bearerSecurity,
  middleware: [companyAccess("read settings"), conditionalRead] as const,
  request: { headers: ConditionalHeaders, params: CompanyParams },
  responses: {
    200: withETag(jsonContent(CompanySchema, "The company")),
    ...notModified,
    ...errorResponses(400, 401, 403, 404, 429),
  },
});

export const listRoles = createRoute({
  method: "get",
  operationId: "listRoles",
  path: "/companies/{company_id}/roles",
  tags,
  summary: "List the roles a member can be given",
  description: "Needs `read settings` in that company.",
  security: bearerSecurity,
  middleware: [companyAccess("read settings")] as const,
  request: { params: CompanyParams },
  responses: {
    200: jsonContent(z.array(RoleSchema), "The company's roles"),
    ...errorResponses(400, 401, 403, 404, 429),
  },
});

/**
 * The sites routes exist at `/companies/{company_id}/…` and at the seed
 * samples' `/{company_id}/…` (docs/decisions.md); `/site/{id}` and `/sites/{id}`
 * are both served. One factory keeps every form identical.
 */
const listSitesAt = (path: string, seedForm: boolean, operationId: string) =>
  createRoute({
    method: "get",
    operationId,
    path,
    tags,
    summary: "List all people-search sites with scanner status",
    description: `Needs \`read sites\` in that company.${seedForm ? " Same as `GET /companies/{company_id}/sites`." : ""}`,
    deprecated: seedForm,
    security: bearerSecurity,
    middleware: [companyAccess("read sites")] as const,
    request: { params: CompanyParams },
    responses: {
      200: jsonContent(z.array(CompanySchema), "Every people-search site"),
      ...errorResponses(400, 401, 403, 404, 429),
    },
  });

const getSiteAt = (path: string, canonical: boolean, operationId: string) =>
  createRoute({
    method: "get",
    operationId,
    path,
    tags,
    summary: "Read one people-search site",
    description: `Needs \`read sites\` in that company. An id that is not a people-search site answers 404.${
      canonical ? "" : " Same as `GET /companies/{company_id}/site/{id}`."
    }`,
    deprecated: !canonical,
    security: bearerSecurity,
    middleware: [companyAccess("read sites")] as const,
    request: { params: SiteParams },
    responses: {
      200: jsonContent(CompanySchema, "The site"),
      ...errorResponses(400, 401, 403, 404, 429),
    },
  });

export const listSites = listSitesAt("/companies/{company_id}/sites", false, "listSites");
export const getSite = getSiteAt("/companies/{company_id}/site/{id}", true, "getSite");
export const siteAliases = [
  getSiteAt("/companies/{company_id}/sites/{id}", false, "getSiteAlias"),
  getSiteAt("/{company_id}/site/{id}", false, "getSiteSeedForm"),
  getSiteAt("/{company_id}/sites/{id}", false, "getSiteSeedFormAlias"),
];
export const listSitesAlias = listSitesAt("/{company_id}/sites", true, "listSitesSeedForm");
