import type { RouteConfig, RouteHandler } from "@hono/zod-openapi";
import type { SigningRef } from "./domain/provider-signing";
import type { CompanyRow } from "./services/companies";
import type { Deps } from "./services/deps";

/** Who is calling, resolved from the bearer token (docs/decisions.md). */
export type Principal =
  /** `scope: "vcc"`: a container-scoped token, valid only on /apps/vcc/* (docs/decisions.md). */
  | {
      kind: "person";
      tokenId: number;
      personId: number;
      scope?: "vcc";
      /** When the token expires (ms); absent: never. A live stream closes then (docs/realtime.md). */
      expiresAt?: number;
      /**
       * The device the token is (name null: minted by the operator; `createdAt` ms), for the person's object
       * to adopt it at its first check (objects/person/devices.ts); absent in records written before.
       */
      device?: { name: string | null; createdAt: number };
    }
  /**
   * `signing`: a provider token's signing configuration; its requests must be signed (docs/providers.md).
   * Twilio's auth token only sealed: a principal is written to KV with the token's record.
   */
  | { kind: "service"; tokenId: number; service: string; scopes: string[]; signing?: SigningRef };

/**
 * The caller's standing in the company of a `/companies/{company_id}/…` path,
 * and the company itself (read by the same query: a company read needs no other).
 */
export type CompanyAccess = {
  companyId: number;
  membershipId: number;
  permissions: string[];
  /** The company's employee-list version, read with the access check (null: none recorded). */
  listVersion: string | null;
  company: CompanyRow;
};

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
