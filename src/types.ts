import type { RouteConfig, RouteHandler } from "@hono/zod-openapi";
import type { Principal } from "./domain/principal";
import type { CompanyAccess } from "./services/companies";
import type { Deps } from "./services/deps";

/* The shapes of the request's variables live with what makes them: re-exported for routes and middleware. */
export type { Principal } from "./domain/principal";
export type { CompanyAccess } from "./services/companies";

/**
 * What charging one ringing-path lookup decided (rate-limit.ts `chargeLookup`): `admitted` by the token's
 * budget (else the answer is a 429), and whether the receiving number was `withinShare` of it (else its
 * blocked call is counted, not listed).
 */
export type LookupCharge = { admitted: boolean; withinShare: boolean };

export type AppEnv = {
  Bindings: Env;
  Variables: {
    requestId: string;
    /** What a command needs: db, trust index, queues, person objects, the write guard (services/deps.ts). */
    deps: Deps;
    /** null when the request carried no usable token; see `authFailure`. */
    principal: Principal | null;
    /** Why the token was refused, for routes that require one. */
    authFailure: string | null;
    company: CompanyAccess;
    /** This request was already counted against its IP's budget (see `limitByIp`). */
    ipCharged: boolean;
    /**
     * Whether the token's rate limit admitted this request. A read runs while
     * the limiter answers (rate-limit.ts) and is swapped for a 429 when it
     * did not; work a read defers past its answer waits for this first.
     */
    admitted: Promise<boolean>;
    /**
     * The ringing path with a service token (rate-limit.ts): charges this lookup to its receiving
     * number's share (E.164, or null when unreadable) and then to the token's budget; called by the
     * handler once it has read the number, awaited by the rate limit after it. Absent otherwise.
     */
    chargeLookup?: (receiver: string | null) => Promise<LookupCharge>;
  };
};

export type AppRouteHandler<R extends RouteConfig> = RouteHandler<R, AppEnv>;
