import { z, type OpenAPIHono } from "@hono/zod-openapi";
import { errorBody, ErrorSchema, type ErrorStatus } from "./errors";

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
  426: "A WebSocket endpoint asked without `Upgrade: websocket`",
  429: "Rate limit exceeded; see Retry-After",
  500: "Unexpected failure; reported with the request id",
  502: "A provider the request needed (SMS, email) refused it; nothing was changed",
  503: "A provider or object the request needed did not answer, or a provider or Worker secret is not configured here; the message names it",
};

/** A message each status really answers, for the document's examples (one per status, not one for all). */
const ERROR_EXAMPLES: Record<ErrorStatus, string> = {
  400: "invalid body: `email` must be an email address; `first_name` is required",
  401: "the bearer token is unknown: this API never issued it, or it was deleted, so it is not valid",
  403: "this needs the `write employees` permission, which your roles in company 1 do not grant",
  404: "company 7 does not exist",
  409: "the request first sent with this `Idempotency-Key` is still being answered; retry in a moment",
  410: "deletions are remembered for 90 days and `since` is older; resynchronise the contacts in full",
  413: "the request body is larger than 1 MiB",
  422: "this `Idempotency-Key` was used for another request in the last 24 h; a new request needs a new key",
  426: "this endpoint is a WebSocket: connect with `Upgrade: websocket` (see docs/realtime.md)",
  429: "this token made more than 1000 requests in the last minute; retry after the Retry-After delay",
  500: "something went wrong on our side; quote request id 8d3c2f0e-1b7a-4c55-9e61-0f2a7d9b4c13 when reporting it",
  502: "the code could not be sent: Twilio answered 400 (error 21211)",
  503: "the code could not be sent: Telnyx did not answer within 10 s",
};

/** Every 429 carries it (lib/errors `tooManyRequests`), as a reference to `components.headers` (`COMMON_HEADERS`). */
const retryAfterHeaders = { "Retry-After": { $ref: "#/components/headers/Retry-After" } };

/** Documents the error answers a route can give, all in the one error body (a 429 with its `Retry-After`). */
export function errorResponses<S extends ErrorStatus>(...statuses: S[]) {
  return Object.fromEntries(
    statuses.map((status) => {
      const response = {
        content: { "application/json": { schema: ErrorSchema, example: errorBody(status, ERROR_EXAMPLES[status]) } },
        description: ERROR_DESCRIPTIONS[status],
      };
      return [status, status === 429 ? { ...response, headers: retryAfterHeaders } : response];
    }),
  ) as {
    [K in S]: {
      content: { "application/json": { schema: typeof ErrorSchema; example: ReturnType<typeof errorBody> } };
      description: string;
      headers?: typeof retryAfterHeaders;
    };
  };
}

/**
 * The response headers the app's middleware adds to answers of every route
 * (src/app.ts), declared once as the document's `components.headers`
 * (registered in app.ts) and named on each operation's answers by
 * `withCommonHeaders`, which routes/create-router.ts applies to every route
 * (`Retry-After`, on every 429, by `errorResponses`):
 * - `X-Request-Id` on every answer (docs/decisions.md, "Wire and errors");
 * - `RateLimit` and `RateLimit-Policy` on a success of a token's request
 *   (docs/decisions.md, "Rate limits");
 * - `x-d1-bookmark` where the answer's D1 session has one: any answer of a
 *   read, a success of a write (docs/capacity.md, "Reads near users").
 */
export const COMMON_HEADERS = {
  "Retry-After": {
    required: true,
    description: "Seconds to wait before retrying (a whole number)",
    example: "30",
  },
  "X-Request-Id": {
    required: true,
    description:
      "The request's id: the inbound `X-Request-Id` when the request had one, else a new UUID. A 500's message quotes it",
    example: "8d3c2f0e-1b7a-4c55-9e61-0f2a7d9b4c13",
  },
  RateLimit: {
    required: true,
    description:
      "IETF RateLimit field: what is left of the token's budget (`r`) and the seconds until its window ends (`t`), " +
      "as the server that answered counted it; the 429's `Retry-After` is the authority",
    example: '"person";r=998;t=42',
  },
  "RateLimit-Policy": {
    required: true,
    description: "IETF RateLimit-Policy field: the token's budget, `q` requests per `w` seconds",
    example: '"person";q=1000;w=60',
  },
  "x-d1-bookmark": {
    required: false,
    description:
      "Where the database stood when this answer was made; send it back on the next request to read at least " +
      "that fresh (your own writes included). Sent on any answer of a read and on a write's success, when the " +
      "answer touched the database or the request sent one",
    example: "00000085-0000024c-00004c6d-8e61117bf38d7adb71b934ebbf891683",
  },
} as const;

export type CommonHeader = keyof typeof COMMON_HEADERS;

/** `COMMON_HEADERS` as OpenAPI header objects, for `components.headers`. */
export const commonHeaderComponents = () =>
  Object.entries(COMMON_HEADERS).map(([name, { required, description, example }]) => ({
    name,
    header: { required, description, schema: { type: "string" as const, example } },
  }));

/** The answers of a route: a zod object of headers, a plain headers object, or none. */
type Responses = Record<string, { headers?: z.ZodObject<z.ZodRawShape> | Record<string, unknown> } | object>;

/**
 * Adds the common headers `which(status)` names to each answer of a route: as
 * references to `components.headers`, or, where the answer already declares
 * its own headers as a zod object (the library renders those whole), as zod
 * fields beside them.
 */
export function withCommonHeaders<R extends Responses>(responses: R, which: (status: number) => CommonHeader[]): R {
  return Object.fromEntries(
    Object.entries(responses).map(([status, response]) => {
      const names = which(Number(status));
      if (names.length === 0 || "$ref" in response) return [status, response];
      const own = (response as { headers?: unknown }).headers;
      if (own instanceof z.ZodObject) {
        const fields = Object.fromEntries(
          names.map((name) => {
            const { required, description, example } = COMMON_HEADERS[name];
            const field = z.string().openapi({ description, example });
            return [name, required ? field : field.optional()];
          }),
        );
        return [status, { ...response, headers: own.extend(fields) }];
      }
      const refs = Object.fromEntries(names.map((name) => [name, { $ref: `#/components/headers/${name}` }]));
      return [status, { ...response, headers: { ...(own as object | undefined), ...refs } }];
    }),
  ) as R;
}

/**
 * An optional request field the server fills with `value` when it is absent.
 * The document states the value in words (the field's description), not as
 * JSON Schema's `default`: openapi-typescript (its `defaultNonNullable`, on by
 * default) makes a property with a `default` required in a generated client,
 * so every client would have to send it (docs/decisions.md, "The document
 * states the rules").
 */
export const whenAbsent = <T extends z.ZodType>(schema: T, value: z.output<T>) =>
  schema.optional().transform((given): z.output<T> => (given === undefined ? value : given));

/**
 * A change body that refuses `{}`, as the document states it: at least one
 * property (`minProperties`), and that one among `fields` (`anyOf` of each
 * required), since the server ignores a field it does not know.
 */
export const atLeastOneOf = (fields: readonly string[]) => ({
  minProperties: 1,
  anyOf: fields.map((field) => ({ required: [field] })),
});

/** Every authenticated route declares this, so the document shows the lock. */
export const bearerSecurity = [{ bearerAuth: [] }];

/** Public routes declare this: no token needed (so the document says so explicitly). */
export const noSecurity: { [scheme: string]: string[] }[] = [];

/** The areas of the API, in the order the reference shows them; every operation names one. */
export const TAGS = [
  { name: "Secure calling", description: "The telephony provider's lookups and the secure-calling app (`/apps/buzz`)" },
  { name: "Me", description: "The caller's own account, their phones and settings (`/me`)" },
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
      'Secure calling, contacts, employee exposure, licenses, consent container and webhooks. Errors always have the body `{"error": {"code", "message"}}`. Every answer carries `Date`; successes carry the IETF `RateLimit` and `RateLimit-Policy` fields (the token\'s budget and what is left of it in this window). Ids are 64-bit integers (`format: int64`). Threat model and limits: docs/security.md in the repository.',
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
