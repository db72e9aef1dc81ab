import type { Context } from "hono";
import { createMiddleware } from "hono/factory";
import { WriteGuard } from "../db/write-guard";
import { badRequest } from "../lib/errors";
import { createDeps } from "../services/create-deps";
import type { Deps } from "../services/deps";
import type { AppEnv } from "../types";
import { readsOnly } from "./request-kind";

/** The header carrying a D1 bookmark: answered on every response, accepted on requests. */
export const BOOKMARK_HEADER = "x-d1-bookmark";
/** D1 bookmarks are opaque, but short and made of hex groups and dashes; anything else is refused. */
const BOOKMARK_SHAPE = /^[0-9A-Za-z-]{1,128}$/;

/**
 * Puts the dependency handle (`c.var.deps`, services/deps.ts: the drizzle
 * client among the rest) on the context, once per request. Reads go through a D1 session
 * (https://developers.cloudflare.com/d1/best-practices/read-replication/), so
 * a read replica near the caller may serve them:
 * - a read starts anywhere (`first-unconstrained`), or, when the client
 *   echoes the `x-d1-bookmark` of an earlier answer, at a replica at least as
 *   fresh as that answer: read-your-writes across requests;
 * - a write runs in a session that starts on the primary; its answer's
 *   bookmark is that session's after the write (no query of its own), so a
 *   read echoing it sees the write. The session is wrapped in a write guard
 *   (db/write-guard.ts): a token verified from the cache is checked again
 *   inside the request's first D1 write (services/tokens.ts).
 * See docs/capacity.md ("Reads near users").
 */
export const database = createMiddleware<AppEnv>(async (c, next) => {
  const bookmark = c.req.header(BOOKMARK_HEADER)?.trim();
  if (bookmark !== undefined && !BOOKMARK_SHAPE.test(bookmark)) {
    throw badRequest(`\`${BOOKMARK_HEADER}\` must be a bookmark this API returned in that header`);
  }
  if (readsOnly(c)) {
    const session = c.env.DB.withSession(bookmark ?? "first-unconstrained");
    useDeps(c, createDeps(c.env, session));
    await next();
    // A read that asked D1 nothing (it was answered by a person's object) hands the client's bookmark back.
    const after = session.getBookmark() ?? bookmark;
    if (after) c.header(BOOKMARK_HEADER, after);
    return;
  }
  const session = c.env.DB.withSession("first-primary");
  const guard = new WriteGuard(session);
  useDeps(c, createDeps(c.env, guard.database, guard));
  await next();
  // A request that wrote nothing runs its guard now: a revoked token answers 401 whatever it did.
  if (c.res.status !== 401) {
    try {
      await guard.finish();
    } catch (err) {
      // The handler's answer is not sent: forget it, or Hono would copy its headers (RateLimit, Location,
      // ETag, Idempotent-Replayed) onto the refusal that replaces it.
      c.res = undefined as unknown as Response;
      throw err;
    }
  }
  if (c.res.status >= 400) return;
  const after = session.getBookmark();
  if (after) c.header(BOOKMARK_HEADER, after);
});

function useDeps(c: Context<AppEnv>, deps: Deps) {
  c.set("deps", deps);
}
