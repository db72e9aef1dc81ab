import { createMiddleware } from "hono/factory";
import { rejectTwiml, wantsTwiml, XML_CONTENT_TYPE } from "../lib/twiml";
import type { AppEnv } from "../types";

/**
 * A trust-lookup that asked for TwiML gets TwiML whatever happens
 * (docs/providers.md, "Answering in TwiML"): a refusal (401, 403, 429, …)
 * keeps its status and headers, and its body becomes a valid `<Reject>`, so
 * the provider's own fallback applies and nothing it parses is JSON. The
 * error's sentence stays readable in `Lookup-Error`. Mounted on the ringing
 * path before everything that can refuse.
 */
export const twimlRefusals = createMiddleware<AppEnv>(async (c, next) => {
  await next();
  if (c.res.status < 400 || !wantsTwiml(c.req.url, c.req.header("Accept"))) return;
  const headers = new Headers(c.res.headers);
  try {
    const body = (await c.res.clone().json()) as { error?: { message?: unknown } };
    if (typeof body.error?.message === "string") headers.set("Lookup-Error", body.error.message);
  } catch {
    // Not the error body: nothing to carry over.
  }
  headers.set("Content-Type", XML_CONTENT_TYPE);
  headers.delete("Content-Length");
  c.res = new Response(rejectTwiml(), { status: c.res.status, headers });
});
