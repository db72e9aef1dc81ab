import { z, type OpenAPIHono } from "@hono/zod-openapi";
import { ErrorSchema, type ErrorStatus } from "./errors";

export const jsonContent = <T extends z.ZodType>(schema: T, description: string) => ({
  content: { "application/json": { schema } },
  description,
});

const ERROR_DESCRIPTIONS: Record<ErrorStatus, string> = {
  400: "Invalid input; the message names every offending field",
  401: "Missing, malformed, unknown, expired or revoked bearer token",
  403: "The token is valid but lacks the permission or scope this needs",
  404: "No such resource for this caller (other tenants' resources are reported as missing)",
  409: "Conflicts with the current state",
  410: "What was asked for is no longer kept; the message says what to do instead",
  413: "Request body larger than 1 MiB",
  422: "The `Idempotency-Key` was used for another request",
  429: "Rate limit exceeded; see Retry-After",
  500: "Unexpected failure; reported with the request id",
};

/** Every 429 carries it (lib/errors `tooManyRequests`): seconds until the budget allows a retry. */
export const retryAfterHeaders = z.object({
  "Retry-After": z.string().openapi({
    description: "Seconds to wait before retrying (a whole number)",
    example: "30",
  }),
});

/** Documents the error answers a route can give, all in the one error body (a 429 with its `Retry-After`). */
export function errorResponses<S extends ErrorStatus>(...statuses: S[]) {
  return Object.fromEntries(
    statuses.map((status) => {
      const response = jsonContent(ErrorSchema, ERROR_DESCRIPTIONS[status]);
      return [status, status === 429 ? { ...response, headers: retryAfterHeaders } : response];
    }),
  ) as {
    [K in S]: ReturnType<typeof jsonContent<typeof ErrorSchema>> & { headers?: typeof retryAfterHeaders };
  };
}

/** Every authenticated route declares this, so the document shows the lock. */
export const bearerSecurity = [{ bearerAuth: [] }];

/** Public routes declare this: no token needed (so the document says so explicitly). */
export const noSecurity: { [scheme: string]: string[] }[] = [];

/** The areas of the API, in the order the reference shows them; every operation names one. */
export const TAGS = [
  { name: "Secure calling", description: "The telephony provider's lookups and the secure-calling app (`/apps/buzz`)" },
  { name: "Contacts", description: "A person's contacts, trust requests and decisions, coworkers (`/contacts`)" },
  { name: "Companies", description: "A company, its roles and the people-search sites (`/companies/{company_id}`)" },
  { name: "Employees", description: "A company's employees and their exposures on people-search sites" },
  { name: "Licenses", description: "The license catalog and a company's seats" },
  { name: "Webhooks", description: "A company's webhooks and their delivery history" },
  { name: "Consent container", description: "The consent container publisher pages load (`/apps/vcc`)" },
  { name: "Scans", description: "Scan results from the scanning service (`/internal`)" },
  {
    name: "Platform admin",
    description: "The operator's companies, members and containers (`/internal`, scope `platform:admin`)",
  },
  { name: "Operations", description: "Health check" },
];

/** OpenAPI 3.1's SPDX `identifier` (a variable: the library's LicenseObject type is 3.0's). */
const license = { name: "Proprietary", identifier: "LicenseRef-Proprietary" };

/** The document's top level; the paths come from the routes (`app.doc31`). */
export const DOCUMENT: Parameters<OpenAPIHono["getOpenAPI31Document"]>[0] = {
  openapi: "3.1.0",
  info: {
    title: "Privacy Platform API",
    version: "0.1.0",
    description:
      'Secure calling, contacts, employee exposure, licenses, consent container and webhooks. Errors always have the body `{"error": {"code", "message"}}`. Threat model and limits: docs/security.md in the repository.',
    license,
  },
  servers: [{ url: "/", description: "The deployment serving this document" }],
  tags: TAGS,
};

/** The top level as /openapi.json serves it: its server is the origin the document was fetched from. */
export const documentFor = (origin: string): typeof DOCUMENT => ({
  ...DOCUMENT,
  servers: [{ url: origin, description: "This deployment (the origin this document was fetched from)" }],
});
