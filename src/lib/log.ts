import { loggableError } from "./errors";

/**
 * Structured logs: one JSON object per line. An error is logged by its name
 * and message only, never a query's text or its bound values (personal data
 * must not reach the logs; docs/security.md).
 */
export function logError(what: string, err: unknown, fields: Record<string, unknown> = {}) {
  console.error(JSON.stringify({ level: "error", error: what, cause: describe(err), ...fields }));
}

export function logInfo(fields: Record<string, unknown>) {
  console.log(JSON.stringify(fields));
}

/** `Name: message`, redacted like a 500's log line (`loggableError`): no SQL, no bound values. */
function describe(err: unknown): string {
  const { name, message } = loggableError(err);
  return `${name}: ${message}`;
}
