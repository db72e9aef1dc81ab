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

/** `Name: message`, with anything after a D1/SQLite error's own text dropped. */
function describe(err: unknown): string {
  if (!(err instanceof Error)) return String(err).slice(0, 200);
  const message = err.message.replace(/Failed query:[\s\S]*/i, "").replace(/params:[\s\S]*/i, "").trim();
  return `${err.name}: ${message}`.slice(0, 300);
}
