import { createMiddleware } from "hono/factory";
import { requestId as assignRequestId } from "hono/request-id";
import type { AppEnv } from "../types";

const HEADER = "X-Request-Id";
const assign = assignRequestId({ headerName: HEADER });

/**
 * `X-Request-Id` on every answer (docs/decisions.md, "Wire and errors"):
 * hono's middleware names the request (the inbound id, else a new UUID) and
 * puts it on the answers the app builds; an answer a handler returns whole
 * (the stream's 101 from the person's object) never sees hono's prepared
 * headers, so it gets the header here.
 */
export const requestId = createMiddleware<AppEnv>((c, next) =>
  assign(c, async () => {
    await next();
    if (!c.res.headers.has(HEADER)) c.res.headers.set(HEADER, c.var.requestId);
  }),
);
