import type { Context } from "hono";
import { getCookie } from "hono/cookie";
import { createMiddleware } from "hono/factory";
import { forbidden, unauthorized } from "../../lib/errors";
import { findEnabledContainer, originAllowed } from "../../services/consent";
import { tokenHasValidShape, verifyToken } from "../../services/tokens";
import type { AppEnv } from "../../types";

export const isDevelopment = (c: Context<AppEnv>) => c.var.deps.environment === "development";

/**
 * Credentialed CORS for a publisher page (docs/consent.md, "Security model"): the request
 * `Origin` is echoed only when it is the publisher's domain or a subdomain,
 * over https (http too in development). Always `Vary: Origin`.
 */
export function grantPublisherCors(c: Context<AppEnv>, domain: string | null | undefined, preflight = false) {
  c.header("Vary", "Origin");
  const origin = c.req.header("Origin");
  if (!originAllowed(origin, domain ?? null, isDevelopment(c))) return;
  c.header("Access-Control-Allow-Origin", origin!);
  c.header("Access-Control-Allow-Credentials", "true");
  if (preflight) {
    c.header("Access-Control-Allow-Methods", "PUT");
    c.header("Access-Control-Allow-Headers", "Content-Type, Authorization");
    c.header("Access-Control-Max-Age", "600");
  }
}

/**
 * For writes from the container: grants CORS to the publisher of the path's
 * container, then requires a visitor, the person of a bearer token or else of
 * the `session` cookie (verified like every write: from the cache, then again inside
 * the write's own first D1 statement, db/write-guard.ts), and leaves them
 * on `c.var.principal`. Runs before body validation, so no identity is 401.
 */
export const containerVisitor = createMiddleware<AppEnv>(async (c, next) => {
  const container = await findEnabledContainer(c.var.deps, c.req.param("container_id") ?? "");
  grantPublisherCors(c, container?.domain);

  if (!c.var.principal) {
    if (c.var.authFailure) throw unauthorized(c.var.authFailure);
    const session = getCookie(c, "session");
    const check =
      session && tokenHasValidShape(session)
        ? await verifyToken(c.var.deps, session, new Date(), { write: true })
        : null;
    if (!check?.ok || check.principal.kind !== "person")
      throw unauthorized("sign in first: this needs the `session` cookie or a person's bearer token");
    c.set("principal", check.principal);
  }
  if (c.var.principal!.kind !== "person") throw forbidden("this endpoint needs a person, not a service token");
  await next();
});
