import { createRoute } from "@hono/zod-openapi";
import { bearerSecurity, errorResponses, jsonContent } from "../../lib/openapi";
import { requireAuth } from "../../middleware/auth";
import {
  CompanyChangesSchema,
  CompanyIdParams,
  ContainerConfigSchema,
  MemberCreatedSchema,
  NewCompanySchema,
  NewMemberSchema,
  PlatformCompanySchema,
  PlatformContainerSchema,
  PublisherParams,
} from "./admin.schemas";

const tags = ["Platform admin"];
const requireAdmin = requireAuth({ scope: "platform:admin" });
const NEEDS = "Needs a service token with scope `platform:admin` (the operator; `npm run admin`). ";

export const createCompany = createRoute({
  operationId: "adminCreateCompany",
  method: "post",
  path: "/internal/companies",
  tags,
  summary: "Create a company of any kind",
  description:
    NEEDS +
    "An `employer` is a tenant and starts with the roles Admin, HR and Viewer; a `site` is a people-search site " +
    "(`scanner`), a `publisher` owns a consent container (`domain`), a `vendor` is listed in containers " +
    "(`profile_url`). A field of another kind is 400; a slug any company already has is 409.",
  security: bearerSecurity,
  middleware: [requireAdmin] as const,
  request: { body: { content: { "application/json": { schema: NewCompanySchema } }, required: true } },
  responses: {
    201: jsonContent(PlatformCompanySchema, "The company created"),
    ...errorResponses(400, 401, 403, 409, 413, 429),
  },
});

export const updateCompany = createRoute({
  operationId: "adminUpdateCompany",
  method: "patch",
  path: "/internal/companies/{id}",
  tags,
  summary: "Change a company's details or enable/disable it",
  description:
    NEEDS +
    "Only the fields given change. `domain` is for publishers, `scanner` for sites (400 for other kinds). " +
    "A disabled publisher's container answers 404 to visitors.",
  security: bearerSecurity,
  middleware: [requireAdmin] as const,
  request: {
    params: CompanyIdParams,
    body: { content: { "application/json": { schema: CompanyChangesSchema } }, required: true },
  },
  responses: {
    200: jsonContent(PlatformCompanySchema, "The company as it is now"),
    ...errorResponses(400, 401, 403, 404, 413, 429),
  },
});

export const addMember = createRoute({
  operationId: "adminAddMember",
  method: "post",
  path: "/internal/companies/{id}/members",
  tags,
  summary: "Seat a member in an employer (its first Admin)",
  description:
    NEEDS +
    "Creates the person with this email (a company-managed address), or links the person who already has it " +
    "(their names stay as they are), as a member with the given roles. Only employers have members (400); a role " +
    "the company lacks is 400; a person already a member is 409. Mint the person's token with " +
    "`npm run token -- mint --person <person_id>`.",
  security: bearerSecurity,
  middleware: [requireAdmin] as const,
  request: {
    params: CompanyIdParams,
    body: { content: { "application/json": { schema: NewMemberSchema } }, required: true },
  },
  responses: {
    201: jsonContent(MemberCreatedSchema, "The member's person id"),
    ...errorResponses(400, 401, 403, 404, 409, 413, 429),
  },
});

export const configureContainer = createRoute({
  operationId: "adminConfigureContainer",
  method: "put",
  path: "/internal/containers/{publisher_slug}",
  tags,
  summary: "Create or replace a publisher's consent container",
  description:
    NEEDS +
    "`vendors` are the container's vendors in display order (companies of kind `vendor`; an unknown one is 400); " +
    'without `vendors` the container keeps the ones it lists, so `{"enabled": false}` disables it as it is. ' +
    "Answers the container as an anonymous visitor sees it, with `enabled`; `load_container` shows the change at once.",
  security: bearerSecurity,
  middleware: [requireAdmin] as const,
  request: {
    params: PublisherParams,
    body: { content: { "application/json": { schema: ContainerConfigSchema } }, required: true },
  },
  responses: {
    200: jsonContent(PlatformContainerSchema, "The container as configured"),
    ...errorResponses(400, 401, 403, 404, 413, 429),
  },
});
