import type { Context } from "hono";

/** trust-lookup: a question by every transport, never a write (its POST reads like a GET). */
export const RINGING_PATH = "/apps/buzz/trust-lookup";

/**
 * The routes a telephony provider's webhook calls while a call rings (trust-lookup, call-lookup): the only
 * ones HTTP Basic authenticates (auth.ts); in rate-limit.ts, a service token's lookups there are charged
 * to the receiving number's share, and a request without credentials is the challenge Twilio waits for.
 */
const PROVIDER_WEBHOOKS = new Set([RINGING_PATH, "/apps/buzz/call-lookup"]);
export const isProviderWebhook = (path: string) => PROVIDER_WEBHOOKS.has(path.replace(/\/$/, ""));

const READ_METHODS = new Set(["GET", "HEAD", "OPTIONS"]);

/**
 * Whether a request only reads: a read method, or trust-lookup by any
 * transport. One answer for every layer that treats reads differently: the
 * token caches (a write re-checks its token in D1), the D1 session (reads may
 * go to a replica) and the rate limit (a read's check runs alongside it).
 */
export const readsOnly = (c: Context) => READ_METHODS.has(c.req.method) || c.req.path === RINGING_PATH;
