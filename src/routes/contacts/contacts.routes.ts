import { createRoute, z } from "@hono/zod-openapi";
import { bearerSecurity, errorResponses, jsonContent } from "../../lib/openapi";
import { cursorHeaders, pageHeaders } from "../../lib/pagination";
import { requirePerson } from "../../middleware/auth";
import { developmentOnly } from "../../middleware/development-only";
import {
  CompanyEmployeesSchema,
  CompanyParams,
  ContactParams,
  ContactSchema,
  ContactsQuery,
  ContactSyncSchema,
  ContactWriteSchema,
  DeletedContactSchema,
  DeletedContactsQuery,
  PersonParams,
  RequesterParams,
  SuccessSchema,
  TrustDecisionResultSchema,
  TrustDecisionSchema,
  TrustRequestCreateSchema,
  TrustRequestSchema,
  TrustRequestsQuery,
} from "./contacts.schemas";
import { IdempotencyHeaders, idempotent, replayedHeader } from "../../middleware/idempotency";
import { ConditionalHeaders, conditionalRead, notModified, withETag } from "../../middleware/conditional";

const tags = ["Contacts"];

export const listContacts = createRoute({
  method: "get",
  operationId: "listContacts",
  path: "/contacts",
  tags,
  summary: "List the caller's contacts",
  description:
    "Oldest first, paged (`X-Total-Count`, `Link`). Without `include` the contacts come without `email`, " +
    "`phone` and `address`; `include` adds the named ones.",
  security: bearerSecurity,
  middleware: [requirePerson, conditionalRead] as const,
  request: { headers: ConditionalHeaders, query: ContactsQuery },
  responses: {
    200: withETag({ ...jsonContent(z.array(ContactSchema), "One page of contacts"), headers: pageHeaders }),
    ...notModified,
    ...errorResponses(400, 401, 403, 429),
  },
});

export const listDeletedContacts = createRoute({
  method: "get",
  operationId: "listDeletedContacts",
  path: "/contacts/deleted",
  tags,
  summary: "The caller's contacts deleted since a time",
  description:
    "Contacts deleted (by `DELETE /contacts/{id}` or `/contacts/clear`) at or after `since`, oldest first, paged " +
    "(`X-Total-Count`, `Link`). Deletions are remembered for 90 days: an older `since` is 410, and the client " +
    "resynchronises in full. The sync algorithm: docs/contacts-sync.md in the repository.",
  security: bearerSecurity,
  middleware: [requirePerson] as const,
  request: { query: DeletedContactsQuery },
  responses: {
    200: { ...jsonContent(z.array(DeletedContactSchema), "One page of deleted contacts"), headers: pageHeaders },
    ...errorResponses(400, 401, 403, 410, 429),
  },
});

const syncAt = (path: string, alias: boolean) =>
  createRoute({
    method: "post",
    operationId: alias ? "postContacts" : "syncContacts",
    path,
    tags,
    summary: "Create and update contacts in one go",
    description:
      "Elements with `id` update that contact, the others create one (at most 500). All or nothing: a bad " +
      "element is a 400 naming its index and nothing is written. Answers the resulting contacts in request order." +
      (alias ? " Same as `POST /contacts/sync`." : ""),
    security: bearerSecurity,
    middleware: [requirePerson, idempotent("person")] as const,
    request: {
      headers: IdempotencyHeaders,
      body: { required: true, content: { "application/json": { schema: ContactSyncSchema } } },
    },
    responses: {
      200: {
        ...jsonContent(z.array(ContactSchema), "The contacts as saved, in request order"),
        headers: replayedHeader,
      },
      ...errorResponses(400, 401, 403, 409, 413, 422, 429),
    },
  });

export const syncContacts = syncAt("/contacts/sync", false);
export const postContacts = syncAt("/contacts", true);

export const listTrustRequests = createRoute({
  method: "get",
  operationId: "listTrustRequests",
  path: "/contacts/requests",
  tags,
  summary: "Pending trust requests to the caller",
  description:
    "Newest first (by when last asked), paged by cursor: `limit` (default 100), and the next page's URL in " +
    '`Link` (rel="next"), absent on the last page. A decided request leaves the list.',
  security: bearerSecurity,
  middleware: [requirePerson] as const,
  request: { query: TrustRequestsQuery },
  responses: {
    200: { ...jsonContent(z.array(TrustRequestSchema), "One page of pending requests"), headers: cursorHeaders },
    ...errorResponses(400, 401, 403, 429),
  },
});

export const createTrustRequest = createRoute({
  method: "post",
  operationId: "createTrustRequest",
  path: "/contacts/requests",
  tags,
  summary: "Ask a person for trust",
  description:
    "Names the person by exactly one of `user_id`, `phone` or `email`. Answers 201 whether or not anyone " +
    "matched, so it cannot be used to find out who is a user. Asking again while pending refreshes the request. " +
    "A request reaches one person at most: by `phone`, the person whose secure number or proven phone it is, " +
    "nobody else (a request that reaches nobody answers the same).",
  security: bearerSecurity,
  middleware: [requirePerson, idempotent("person")] as const,
  request: {
    headers: IdempotencyHeaders,
    body: { required: true, content: { "application/json": { schema: TrustRequestCreateSchema } } },
  },
  responses: {
    201: { ...jsonContent(SuccessSchema, "The request was recorded (if anyone matched)"), headers: replayedHeader },
    ...errorResponses(400, 401, 403, 409, 413, 422, 429),
  },
});

export const decideTrust = createRoute({
  method: "post",
  operationId: "decideTrust",
  path: "/contacts/trust/{id}",
  tags,
  summary: "Trust or untrust a person who asked",
  description:
    "`trusted` 1 (or true) lets calls from the person's phones and secure number ring; 0 (or false) does not. " +
    "The person must have asked the caller for trust (or been decided on before); anyone else is 404.",
  security: bearerSecurity,
  middleware: [requirePerson] as const,
  request: {
    params: RequesterParams,
    body: { required: true, content: { "application/json": { schema: TrustDecisionSchema } } },
  },
  responses: {
    201: jsonContent(TrustDecisionResultSchema, "The decision"),
    ...errorResponses(400, 401, 403, 404, 413, 429),
  },
});

export const clearContacts = createRoute({
  method: "delete",
  operationId: "clearContacts",
  path: "/contacts/clear",
  tags,
  summary: "Development only: delete all the caller's contacts",
  description: "Exists only when `ENVIRONMENT` is `development`; elsewhere it is 404 like any unknown route.",
  security: bearerSecurity,
  middleware: [developmentOnly, requirePerson] as const,
  responses: { 204: { description: "Cleared" }, ...errorResponses(401, 403, 404, 429) },
});

export const clearContactsOf = createRoute({
  method: "delete",
  operationId: "clearContactsOf",
  path: "/contacts/clear/{id}",
  tags,
  summary: "Development only: delete all the caller's contacts (the seed's form)",
  description: "`id` must be the caller's own person id (another is 404). Development only, like `/contacts/clear`.",
  security: bearerSecurity,
  middleware: [developmentOnly, requirePerson] as const,
  request: { params: PersonParams },
  responses: { 204: { description: "Cleared" }, ...errorResponses(400, 401, 403, 404, 429) },
});

export const listCompanyEmployees = createRoute({
  method: "get",
  operationId: "listCompanyEmployees",
  path: "/contacts/employees",
  tags,
  summary: "Every company the caller belongs to, with its employees",
  security: bearerSecurity,
  middleware: [requirePerson] as const,
  responses: {
    200: jsonContent(z.array(CompanyEmployeesSchema), "Companies by id, employees by name"),
    ...errorResponses(401, 403, 429),
  },
});

export const getCompanyEmployees = createRoute({
  method: "get",
  operationId: "getCompanyEmployees",
  path: "/contacts/employees/{id}",
  tags,
  summary: "One company the caller belongs to, with its employees",
  description: "`id` is a company id; a company the caller does not belong to is 404.",
  security: bearerSecurity,
  middleware: [requirePerson] as const,
  request: { params: CompanyParams },
  responses: {
    200: jsonContent(CompanyEmployeesSchema, "The company and its employees"),
    ...errorResponses(400, 401, 403, 404, 429),
  },
});

export const getContact = createRoute({
  method: "get",
  operationId: "getContact",
  path: "/contacts/{id}",
  tags,
  summary: "Read one of the caller's contacts",
  description: "With every field. Another person's contact is 404.",
  security: bearerSecurity,
  middleware: [requirePerson, conditionalRead] as const,
  request: { headers: ConditionalHeaders, params: ContactParams },
  responses: {
    200: withETag(jsonContent(ContactSchema, "The contact")),
    ...notModified,
    ...errorResponses(400, 401, 403, 404, 429),
  },
});

export const putContact = createRoute({
  method: "put",
  operationId: "putContact",
  path: "/contacts/{id}",
  tags,
  summary: "Update one of the caller's contacts",
  description: "Fields left out keep their value; a collection sent replaces the stored one.",
  security: bearerSecurity,
  middleware: [requirePerson] as const,
  request: {
    params: ContactParams,
    body: { required: true, content: { "application/json": { schema: ContactWriteSchema } } },
  },
  responses: {
    200: jsonContent(ContactSchema, "The updated contact"),
    ...errorResponses(400, 401, 403, 404, 413, 429),
  },
});

export const deleteContact = createRoute({
  method: "delete",
  operationId: "deleteContact",
  path: "/contacts/{id}",
  tags,
  summary: "Delete one of the caller's contacts, permanently",
  security: bearerSecurity,
  middleware: [requirePerson] as const,
  request: { params: ContactParams },
  responses: {
    200: jsonContent(SuccessSchema, "Deleted"),
    ...errorResponses(400, 401, 403, 404, 429),
  },
});
