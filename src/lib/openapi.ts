import type { z } from "@hono/zod-openapi";
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
  413: "Request body larger than 1 MiB",
  429: "Rate limit exceeded; see Retry-After",
  500: "Unexpected failure; reported with the request id",
};

/** Documents the error answers a route can give, all in the one error body. */
export function errorResponses<S extends ErrorStatus>(...statuses: S[]) {
  return Object.fromEntries(
    statuses.map((status) => [status, jsonContent(ErrorSchema, ERROR_DESCRIPTIONS[status])]),
  ) as {
    [K in S]: ReturnType<typeof jsonContent<typeof ErrorSchema>>;
  };
}

/** Every authenticated route declares this, so the document shows the lock. */
export const bearerSecurity = [{ bearerAuth: [] }];
