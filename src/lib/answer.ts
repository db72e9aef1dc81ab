import { ApiError, tooManyRequests, unauthorized, type ErrorStatus } from "./errors";

/**
 * One way to refuse, end to end (docs/architecture.md, "One refusal
 * shape"). A service or a person's object that may refuse answers an
 * `Answer<T>`: `{ ok: true, … }` with what it answers, or a `Refusal`
 * (`{ ok: false, status, message }`, and `retryAfter` in seconds for a
 * 429) — a value, since errors lose their class over RPC and a queue or
 * cron caller may take a refusal as an outcome rather than a failure. The
 * route handler turns it into the API's error once, with `accepted` (or
 * `refused`); a refusal nobody can act on below the route is simply
 * thrown as the one `ApiError` instead.
 */
export type Refusal =
  | { ok: false; status: Exclude<ErrorStatus, 429 | 500>; message: string }
  | { ok: false; status: 429; message: string; retryAfter: number };

/** The answer of an operation that may refuse: `{ ok: true }` with what it answers, or a refusal. */
export type Answer<T extends object = object> = ({ ok: true } & T) | Refusal;

/** A refusal with this status and message (the API's error text, after its status phrase). */
export const refusal = (status: Exclude<ErrorStatus, 429 | 500>, message: string): Refusal => ({
  ok: false,
  status,
  message,
});

/** The bearer token outlived its person (deleted within the token cache window): a 401. */
export const personGone = () => refusal(401, "the bearer token's person no longer exists");

/**
 * The one translation of a refusal into the API's error: its status, its
 * message as the error's text, a 401's `WWW-Authenticate` and a 429's
 * `retryAfter` as `Retry-After` (the same headers as lib/errors.ts's helpers).
 */
export function refused(refusal: Refusal): ApiError {
  if (refusal.status === 429) return tooManyRequests(refusal.message, refusal.retryAfter);
  if (refusal.status === 401) return unauthorized(refusal.message);
  return new ApiError(refusal.status, refusal.message);
}

/** An answer when it accepted, else its refusal thrown as the API's error (`refused`). */
export function accepted<A extends { ok: true } | Refusal>(answer: A): Exclude<A, Refusal> {
  if (!answer.ok) throw refused(answer);
  return answer as Exclude<A, Refusal>;
}
