import { createMiddleware } from "hono/factory";
import { forbidden, unauthorized } from "../lib/errors";
import { logError } from "../lib/log";
import { principalAllowedOn, tokenHasValidShape, verifyToken } from "../services/tokens";
import type { AppEnv, Principal } from "../types";
import { limitByIp } from "./rate-limit";
import { isProviderWebhook, readsOnly } from "./request-kind";

const BEARER = /^Bearer[ ]+(\S+)\s*$/i;
const BASIC = /^Basic[ ]+([A-Za-z0-9+/]+={0,2})\s*$/i;

/**
 * How a token may be sent, as the 401 messages say it: Basic is named only on the routes that
 * read it, so no other route's message suggests credentials it would refuse.
 */
const howToSend = (basic: boolean) =>
  basic ? "`Bearer <token>`, or `Basic` with the token as the password" : "`Bearer <token>`";

/**
 * The token an Authorization header carries: `Bearer <token>`, or HTTP Basic
 * with the token as the password (`Basic base64(user:token)`, the user
 * ignored) for telephony webhooks that can send nothing else
 * (docs/decisions.md, "Auth"; docs/providers.md, "The token"). Anything
 * else, or Basic that does not decode, is undefined: the same 401 as a
 * malformed bearer header.
 */
export function tokenFromAuthorization(header: string): string | undefined {
  const bearer = BEARER.exec(header)?.[1];
  if (bearer) return bearer;
  const basic = BASIC.exec(header)?.[1];
  if (!basic) return undefined;
  let credentials: string;
  try {
    credentials = atob(basic);
  } catch {
    return undefined;
  }
  const colon = credentials.indexOf(":");
  return colon === -1 ? undefined : credentials.slice(colon + 1);
}

/**
 * Runs on every request: resolves the bearer token, if any, to a principal.
 * It never rejects by itself, so unknown routes still answer 404 and the rate
 * limiter can key on the token; routes that need a caller use `requireAuth`.
 */
export const identify = createMiddleware<AppEnv>(async (c, next) => {
  c.set("principal", null);
  c.set("authFailure", null);
  const header = c.req.header("Authorization");
  // HTTP Basic carries a token only to the telephony provider's two routes (docs/security.md): a browser
  // that saved Basic credentials sends them cross-site, so everywhere else they are refused unread.
  if (header !== undefined && /^Basic\b/i.test(header) && !isProviderWebhook(c.req.path)) {
    c.set("authFailure", "HTTP Basic is accepted only by trust-lookup and call-lookup; send `Bearer <token>`");
  } else if (header !== undefined) {
    const token = tokenFromAuthorization(header);
    const send = howToSend(isProviderWebhook(c.req.path));
    if (!token) {
      c.set("authFailure", `the Authorization header must be ${send}`);
    } else if (!tokenHasValidShape(token)) {
      c.set(
        "authFailure",
        `the token is malformed: this API's tokens are 8 to 256 letters, digits, \`_\` or \`-\` (send ${send})`,
      );
    } else {
      const check = await verifyToken(c.var.deps, token, new Date(), {
        onFirstUse: (work) =>
          c.executionCtx.waitUntil(work.catch((err: unknown) => logError("recording token use failed", err))),
        countUses: true,
        // A write served from the cache re-checks the token inside its own first D1 write
        // (revocation, a removed person: 401, nothing written); a trust-lookup POST is a
        // question, not a write.
        write: !readsOnly(c),
        recorded: true,
        // A token in neither cache costs the caller's IP budget before it costs a D1 read.
        beforeDatabase: () => limitByIp(c),
      });
      if (!check.ok) c.set("authFailure", check.reason);
      // A container-scoped token (the consent container's cookie) is no token elsewhere.
      else if (!principalAllowedOn(check.principal, c.req.path))
        c.set("authFailure", "this token only authenticates the consent container (/apps/vcc/…)");
      else c.set("principal", check.principal);
    }
  }
  await next();
});

export type AuthRule = { person?: boolean; scope?: string };

/**
 * Route guard: who may call (docs/decisions.md). A person token passes when
 * `person` is set; a service token passes when it holds `scope`.
 * Missing or bad token → 401; a valid token of the wrong kind → 403.
 */
export function requireAuth(rule: AuthRule) {
  return createMiddleware<AppEnv>(async (c, next) => {
    // No Authorization header at all: the message names every way this route takes a token.
    const missing = isProviderWebhook(c.req.path) ? `this endpoint needs a token: ${howToSend(true)}` : null;
    assertAllowed(c.var.principal, c.var.authFailure ?? missing, rule);
    await next();
  });
}

export function assertAllowed(principal: Principal | null, failure: string | null, rule: AuthRule): Principal {
  if (!principal) throw unauthorized(failure ?? "this endpoint needs a bearer token (Authorization: Bearer <token>)");
  if (principal.kind === "person" && rule.person) return principal;
  if (principal.kind === "service" && rule.scope && principal.scopes.includes(rule.scope)) return principal;
  // Says exactly what the route takes: a person token, a service token with its scope, or either.
  const needs = [rule.person && "a person token", rule.scope && `a service token with scope \`${rule.scope}\``];
  const held = principal.kind === "person" ? "a person token" : `a service token${rule.scope ? " without it" : ""}`;
  throw forbidden(`this endpoint needs ${needs.filter(Boolean).join(" or ")}; this is ${held}`);
}

export const requirePerson = requireAuth({ person: true });

/**
 * On routes a telephony provider's webhook calls: a 401 also challenges for
 * HTTP Basic, because Twilio sends the credentials of a webhook URL only after
 * a 401 whose `WWW-Authenticate` asks for them (docs/providers.md). Elsewhere
 * the challenge stays Bearer only (a Basic challenge makes browsers prompt).
 */
export const basicChallenge = createMiddleware<AppEnv>(async (c, next) => {
  await next();
  if (c.res.status === 401) c.res.headers.set("WWW-Authenticate", 'Basic realm="api", Bearer realm="api"');
});

/** The calling person's id; only valid behind `requirePerson` or `companyAccess`. */
export function personId(principal: Principal | null): number {
  if (principal?.kind !== "person") throw unauthorized("this endpoint needs a person token");
  return principal.personId;
}
