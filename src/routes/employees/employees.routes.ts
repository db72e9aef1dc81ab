import { createRoute, z } from "@hono/zod-openapi";
import { bearerSecurity, errorResponses, jsonContent } from "../../lib/openapi";
import { pageHeaders } from "../../lib/pagination";
import { companyAccess } from "../../middleware/company-access";
import { CompanyParams } from "../companies/companies.schemas";
import { BulkCreateEmployeesSchema, CreateEmployeeSchema, UpdateEmployeeSchema } from "./employee-input.schemas";
import {
  EmployeeListQuery,
  EmployeeParams,
  ExposureListQuery,
  ExposureParams,
  ExposureSchema,
  HistoryEntrySchema,
  PersonBodySchema,
} from "./employees.schemas";
import { IdempotencyHeaders, idempotent, replayedHeader } from "../../middleware/idempotency";
import { ConditionalHeaders, conditionalRead, notModified, withETag } from "../../middleware/conditional";

const tags = ["Employees"];

/*
 * The exposure routes are declared (and registered) before `/employees/{id}`:
 * the router tries routes in registration order, and `exposures` must never
 * be read as an employee id.
 */

export const listExposures = createRoute({
  method: "get",
  operationId: "listExposures",
  path: "/companies/{company_id}/employees/exposures",
  tags,
  summary: "List the exposures found for the company's employees",
  description:
    "Needs `read exposures`. Oldest change first; `since` returns what was created or changed at or after it, for polling.",
  security: bearerSecurity,
  middleware: [companyAccess("read exposures")] as const,
  request: { params: CompanyParams, query: ExposureListQuery },
  responses: {
    200: { ...jsonContent(z.array(ExposureSchema), "One page of exposures"), headers: pageHeaders },
    ...errorResponses(400, 401, 403, 404, 429),
  },
});

export const exposureHistory = createRoute({
  method: "get",
  operationId: "exposureHistory",
  path: "/companies/{company_id}/employees/exposures/{id}/history",
  tags,
  summary: "The history of actions on one exposure",
  description: "Needs `read exposures`. Oldest first. An exposure of someone who is not an employee here is 404.",
  security: bearerSecurity,
  middleware: [companyAccess("read exposures")] as const,
  request: { params: ExposureParams },
  responses: {
    200: jsonContent(z.array(HistoryEntrySchema), "The exposure's history"),
    ...errorResponses(400, 401, 403, 404, 429),
  },
});

export const listEmployees = createRoute({
  method: "get",
  operationId: "listEmployees",
  path: "/companies/{company_id}/employees",
  tags,
  summary: "List the company's employees",
  description:
    "Needs `read employees`. Ordered by id; `search` keeps employees with an email starting with it; `after` (with `page` 1) continues after an id without reading the pages before it.",
  security: bearerSecurity,
  middleware: [companyAccess("read employees"), conditionalRead] as const,
  request: { headers: ConditionalHeaders, params: CompanyParams, query: EmployeeListQuery },
  responses: {
    200: withETag({ ...jsonContent(z.array(PersonBodySchema), "One page of employees"), headers: pageHeaders }),
    ...notModified,
    ...errorResponses(400, 401, 403, 404, 429),
  },
});

export const getEmployee = createRoute({
  method: "get",
  operationId: "getEmployee",
  path: "/companies/{company_id}/employees/{id}",
  tags,
  summary: "Read one employee",
  description: "Needs `read employees`.",
  security: bearerSecurity,
  middleware: [companyAccess("read employees"), conditionalRead] as const,
  request: { headers: ConditionalHeaders, params: EmployeeParams },
  responses: {
    200: withETag(jsonContent(PersonBodySchema, "The employee")),
    ...notModified,
    ...errorResponses(400, 401, 403, 404, 429),
  },
});

export const createEmployee = createRoute({
  method: "post",
  operationId: "createEmployee",
  path: "/companies/{company_id}/employees",
  tags,
  summary: "Add an employee",
  description:
    "Needs `write employees`. Values are standardized (emails lowercased, countries ISO alpha-2, US states as two-letter codes, phones E.164). " +
    "400 when an email already belongs to a person, a role or license is unknown, or no seat of the license is free; nothing is written then. " +
    "`ephemeral` employees are removed 24 hours later. Sends `person:created`.",
  security: bearerSecurity,
  middleware: [companyAccess("write employees"), idempotent("company")] as const,
  request: {
    params: CompanyParams,
    headers: IdempotencyHeaders,
    body: { required: true, content: { "application/json": { schema: CreateEmployeeSchema } } },
  },
  responses: {
    200: { ...jsonContent(PersonBodySchema, "The new employee"), headers: replayedHeader },
    ...errorResponses(400, 401, 403, 404, 409, 413, 422, 429),
  },
});

export const createEmployeesBulk = createRoute({
  method: "post",
  operationId: "createEmployeesBulk",
  path: "/companies/{company_id}/employees/bulk",
  tags,
  summary: "Add up to 1,000 employees at once",
  description:
    "Needs `write employees`. A JSON array of 1–1,000 bodies of `POST /companies/{company_id}/employees`, validated and standardized the same way. " +
    "All or nothing: a bad element is a 400 naming its index and field (`[3].emails[0].email`), as is an email repeated inside the batch or already belonging to a person, " +
    "too few free seats of a license for the whole batch, or passing the company's 100,000 employees; nothing is written then and no seat is taken. " +
    "Answers the employees in request order and sends one `person:created` each. Onboarding guide: docs/onboarding.md in the repository.",
  security: bearerSecurity,
  middleware: [companyAccess("write employees"), idempotent("company")] as const,
  request: {
    params: CompanyParams,
    headers: IdempotencyHeaders,
    body: { required: true, content: { "application/json": { schema: BulkCreateEmployeesSchema } } },
  },
  responses: {
    200: { ...jsonContent(z.array(PersonBodySchema), "The new employees, in request order"), headers: replayedHeader },
    ...errorResponses(400, 401, 403, 404, 409, 413, 422, 429),
  },
});

export const updateEmployee = createRoute({
  method: "put",
  operationId: "updateEmployee",
  path: "/companies/{company_id}/employees/{id}",
  tags,
  summary: "Change an employee",
  description:
    "Needs `write employees`. Only the fields given change; `akas`, `phone_numbers` and `addresses` replace the whole list (`[]` removes all). " +
    "`license` assigns or replaces the seat (null frees it). " +
    "403 unless your roles grant every permission the employee holds. " +
    "409 when `roles` would take `write settings` from its last holder, or when a person who also belongs to another company would have their names, dob, akas, phones or addresses changed. " +
    "Sends `person:updated`.",
  security: bearerSecurity,
  middleware: [companyAccess("write employees")] as const,
  request: {
    params: EmployeeParams,
    body: { required: true, content: { "application/json": { schema: UpdateEmployeeSchema } } },
  },
  responses: {
    200: jsonContent(PersonBodySchema, "The employee as changed"),
    ...errorResponses(400, 401, 403, 404, 409, 413, 429),
  },
});

export const removeEmployee = createRoute({
  method: "delete",
  operationId: "removeEmployee",
  path: "/companies/{company_id}/employees/{id}",
  tags,
  summary: "Remove an employee from the company",
  description:
    "Needs `write employees` and every permission the employee holds (else 403). The company's emails and the membership go (freeing the seat); the account goes too when nothing else holds it. " +
    "409 for the company's last member with `write settings`, yourself included. Sends `person:removed`.",
  security: bearerSecurity,
  middleware: [companyAccess("write employees")] as const,
  request: { params: EmployeeParams },
  responses: {
    204: { description: "Removed" },
    ...errorResponses(400, 401, 403, 404, 409, 429),
  },
});
