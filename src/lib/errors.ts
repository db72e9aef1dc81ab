import { z } from "@hono/zod-openapi";
import { HTTPException } from "hono/http-exception";
import type { ContentfulStatusCode } from "hono/utils/http-status";

/** Status phrases that open every error message (docs/decisions.md). */
const PHRASES: Record<number, string> = {
  400: "Bad Request",
  401: "Unauthorized",
  403: "Forbidden",
  404: "Not Found",
  409: "Conflict",
  410: "Gone",
  413: "Payload Too Large",
  422: "Unprocessable Content",
  426: "Upgrade Required",
  429: "Too Many Requests",
  500: "Internal Server Error",
  502: "Bad Gateway",
  503: "Service Unavailable",
};

export type ErrorStatus = 400 | 401 | 403 | 404 | 409 | 410 | 413 | 422 | 426 | 429 | 500 | 502 | 503;

/** The one error body of the API: `{"error": {"code": "404", "message": "Not Found: …"}}`. */
export const ErrorSchema = z
  .object({
    error: z.object({
      code: z.string().openapi({ example: "404" }),
      message: z.string().openapi({ example: "Not Found: company 7 does not exist" }),
    }),
  })
  .openapi("Error");

export type ErrorBody = z.infer<typeof ErrorSchema>;

export const errorBody = (status: ErrorStatus, detail: string): ErrorBody => ({
  error: { code: String(status), message: `${PHRASES[status]}: ${detail}` },
});

/**
 * The one exception every layer throws. `onError` turns it into the error
 * body; `headers` carries extras such as `WWW-Authenticate` or `Retry-After`.
 */
export class ApiError extends HTTPException {
  constructor(
    readonly statusCode: ErrorStatus,
    readonly detail: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(statusCode as ContentfulStatusCode, { message: detail });
    this.name = "ApiError";
  }
}

export const badRequest = (detail: string) => new ApiError(400, detail);
export const unauthorized = (detail: string) => new ApiError(401, detail, { "WWW-Authenticate": 'Bearer realm="api"' });
export const forbidden = (detail: string) => new ApiError(403, detail);
export const notFound = (detail: string) => new ApiError(404, detail);
export const conflict = (detail: string) => new ApiError(409, detail);
export const gone = (detail: string) => new ApiError(410, detail);
export const upgradeRequired = (detail: string) => new ApiError(426, detail, { Upgrade: "websocket" });
export const tooManyRequests = (detail: string, retryAfterSeconds: number) =>
  new ApiError(429, detail, { "Retry-After": String(retryAfterSeconds) });
/** The deployment lacks what this needs (a Worker secret, src/secrets.d.ts): the message names it. */
export const serviceUnavailable = (detail: string) => new ApiError(503, detail);

/**
 * Folds zod issues into one sentence naming every offending field, e.g.
 * "invalid query: `per_page` must be at most 100; `page` is required".
 * At most `MAX_NAMED_ISSUES` are named, then how many more there are: a
 * bulk call of 1,000 bad rows gets a readable answer, not a 70 KB one.
 */
export const MAX_NAMED_ISSUES = 20;

export function describeZodError(error: z.ZodError, target: string): string {
  const named = error.issues.slice(0, MAX_NAMED_ISSUES).map((issue) => {
    const field = formatPath(issue.path);
    const message = /received undefined$/.test(issue.message) ? "is required" : lowerFirst(issue.message);
    return field ? `\`${field}\` ${message}` : message;
  });
  const more = error.issues.length - named.length;
  const rest = more > 0 ? `; and ${more} more ${more === 1 ? "problem" : "problems"}` : "";
  return `invalid ${TARGET_NAMES[target] ?? target}: ${named.join("; ")}${rest}`;
}

const TARGET_NAMES: Record<string, string> = {
  json: "body",
  form: "body",
  query: "query string",
  param: "path",
  header: "headers",
  cookie: "cookies",
};

function formatPath(path: PropertyKey[]): string {
  return path
    .map((segment, i) => (typeof segment === "number" ? `[${segment}]` : `${i === 0 ? "" : "."}${String(segment)}`))
    .join("");
}

function lowerFirst(message: string): string {
  return message.charAt(0).toLowerCase() + message.slice(1);
}

/**
 * An unexpected failure as the log may record it (docs/security.md, "Logging"):
 * its name and a redacted message, never SQL text or bound values. A query
 * error (drizzle's "Failed query: <sql> params: <values>") is replaced by its
 * cause, the driver's own error; quoted text, long numbers and email addresses
 * in what remains are masked, and it is cut to 300 characters.
 */
export function loggableError(err: unknown): { name: string; message: string; frames: string[] } {
  let error: unknown = err;
  while (isQueryError(error)) error = (error as Error).cause ?? new Error("query failed");
  const name = error instanceof Error ? error.name : typeof error;
  const raw = error instanceof Error ? error.message : String(error);
  const frames =
    err instanceof Error && err.stack
      ? err.stack
          .split("\n")
          .filter((line) => /^\s+at /.test(line))
          .slice(0, 8)
          .map((line) => line.trim())
      : [];
  return { name, message: redact(raw), frames };
}

const isQueryError = (error: unknown) =>
  error instanceof Error && ("query" in error || "params" in error || error.message.startsWith("Failed query:"));

function redact(message: string): string {
  const firstLine = message.split("\n")[0] ?? "";
  const cut = firstLine.split(/\bparams:/)[0]!;
  return maskPersonalData(cut.replace(/"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`(?:[^`\\]|\\.)*`/g, "<text>"));
}

/**
 * `text` with its email addresses and long numbers (phone numbers) masked, cut to 300 characters:
 * what a log line may keep of a text that can name a person (a provider's answer quoting the number
 * it refused).
 */
export function maskPersonalData(text: string): string {
  return text
    .replace(/[^\s@"']+@[^\s@"']+/g, "<email>")
    .replace(/\+?\d[\d\s().-]{3,}\d/g, "<number>")
    .slice(0, 300);
}
