import { z } from "@hono/zod-openapi";
import { createMiddleware } from "hono/factory";
import { MAX_KEPT_ANSWER_BYTES, type AnswerToKeep, type KeptAnswer } from "../domain/idempotency";
import { sha256Hex } from "../lib/crypto";
import { ApiError, badRequest, conflict, errorBody, tooManyRequests } from "../lib/errors";
import { logError } from "../lib/log";
import { companyKeys, personKeys } from "../services/idempotency";
import type { AppEnv } from "../types";
import { personId } from "./auth";

const KEY = /^[\x21-\x7e]{1,255}$/;

/**
 * The header as the document declares it on every creating POST. The
 * `idempotent` middleware reads and checks it (route middleware runs before
 * the validators, and it must know the key before the write).
 */
export const IdempotencyHeaders = z.object({
  "Idempotency-Key": z
    .string()
    .regex(KEY)
    .optional()
    .openapi({
      description:
        "Makes a retry safe: the same key with the same request within 24 h answers the first answer again " +
        "(with `Idempotent-Replayed: true`) and writes nothing; with another request it is 422; while the first " +
        "is still being answered, 409. A refusal that wrote nothing (any 4xx, a 5xx before the write) frees the " +
        "key again; a request that wrote but whose answer could not be kept (a 5xx after the write, an answer over " +
        "1 MiB) keeps the key, answering 409 to say so. " +
        "1 to 255 visible ASCII characters, e.g. a UUID. A person may use 1,000 new keys a day, and the answers " +
        "kept for them count against the 10 MiB of their day's activity (429 with `Retry-After` beyond).",
      example: "9b2f6c1e-4f0a-4c7e-9a57-2d1f0f3e8b61",
    }),
});

/** Declares the replay marker on a creating POST's success. */
export const replayedHeader = z.object({
  "Idempotent-Replayed": z
    .string()
    .optional()
    .openapi({ description: "`true` when this is the first answer to the same `Idempotency-Key`, given again" }),
});

/**
 * Idempotency-Key on a creating POST (docs/decisions.md, "Idempotency keys",
 * Stripe's rule): the key is claimed in the caller's own object — as it is
 * (`person`) or under the company's name (`company`) — before
 * the handler runs, and the success it answers is kept for 24 h. Goes after
 * the route's access middleware (it needs the caller, and the company).
 * `answers: "activity"`: the success is the activity record the person's
 * feed holds (POST /apps/buzz/activity), which the object keeps by reference.
 */
export function idempotent(owner: "person" | "company", answers?: "activity") {
  return createMiddleware<AppEnv>(async (c, next) => {
    const key = c.req.header("Idempotency-Key");
    if (key === undefined) return next();
    if (!KEY.test(key)) {
      throw badRequest("`Idempotency-Key` must be 1 to 255 visible ASCII characters (a UUID, for example)");
    }
    const me = personId(c.var.principal);
    const store =
      owner === "person" ? personKeys(c.var.deps, me) : companyKeys(c.var.deps, c.var.company.companyId, me);
    const fingerprint = await sha256Hex(`${c.req.method} ${c.req.path}\n${await c.req.text()}`);
    const claim = await store.claim(key, fingerprint);
    if (claim.state === "mismatch") {
      throw new ApiError(
        422,
        "this `Idempotency-Key` was used for another request in the last 24 h; a new request needs a new key",
      );
    }
    if (claim.state === "busy") {
      throw conflict("the request first sent with this `Idempotency-Key` is still being answered; retry in a moment");
    }
    if (claim.state === "spent") throw tooManyRequests(claim.message, claim.retryAfter);
    if (claim.state === "replay") return replay(claim.answer);

    // Whether the request writes from here on (the claim's own write is behind): one that did keeps its key.
    const writes = c.var.deps.guard?.writes;
    await next();
    const wrote = writes === undefined || c.var.deps.guard!.writes > writes;
    try {
      await store.settle(key, fingerprint, await keepable(c.res, answers, wrote));
    } catch (err) {
      // The write is done and answered; the claim stays until it counts as abandoned (a minute).
      logError("keeping the answer to an Idempotency-Key failed", err);
    }
  });
}

/**
 * What the key keeps: a success small enough to keep (with its record's id, for `activity`); for a
 * request that `wrote` but whose answer cannot be kept (a 5xx after its write, an answer too large),
 * a 409 saying so, so that a retry does not write again; else nothing (the key is free again: every
 * 4xx, a 5xx before any write).
 */
async function keepable(res: Response, answers: "activity" | undefined, wrote: boolean): Promise<AnswerToKeep | null> {
  // A refusal (4xx) writes nothing by design, even when its statement ran (a conditional insert that
  // inserted nothing); only a failure (5xx) after a write keeps the key.
  if (res.status < 200 || res.status > 299) return wrote && res.status >= 500 ? notKept(FAILED_AFTER_WRITING) : null;
  const body = await res.clone().text();
  if (new TextEncoder().encode(body).length > MAX_KEPT_ANSWER_BYTES) return wrote ? notKept(TOO_LARGE) : null;
  const kept: AnswerToKeep = {
    status: res.status,
    body,
    contentType: res.headers.get("Content-Type"),
    location: res.headers.get("Location"),
  };
  // The object checks that the record renders this very body before it keeps the id instead.
  const id = answers === "activity" ? (JSON.parse(body) as { data?: { id?: unknown } }).data?.id : undefined;
  return typeof id === "number" ? { ...kept, activityId: id } : kept;
}

const FAILED_AFTER_WRITING =
  "the request first sent with this `Idempotency-Key` failed after it had written, so what it changed is not known; " +
  "nothing was written again: read the current state before sending the change again with a new key";
const TOO_LARGE =
  "the request first sent with this `Idempotency-Key` was applied, but its answer was over 1 MiB and was not kept; " +
  "nothing was written again: read what it changed instead";

/** The 409 a key keeps in place of an answer it could not keep. */
const notKept = (detail: string): AnswerToKeep => ({
  status: 409,
  body: JSON.stringify(errorBody(409, detail)),
  contentType: "application/json",
  location: null,
});

function replay(answer: KeptAnswer): Response {
  const headers = new Headers({ "Idempotent-Replayed": "true" });
  if (answer.contentType) headers.set("Content-Type", answer.contentType);
  if (answer.location) headers.set("Location", answer.location);
  return new Response(answer.status === 204 ? null : answer.body, { status: answer.status, headers });
}
