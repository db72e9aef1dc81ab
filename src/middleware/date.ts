import { createMiddleware } from "hono/factory";

/**
 * `Date` on every answer (RFC 9110 §6.6.1), errors included. Cloudflare's
 * edge adds it in production, but `wrangler dev` does not, and clients take
 * their sync point from it (docs/contacts-sync.md): set here, it is the same
 * everywhere.
 */
export const dateHeader = createMiddleware(async (c, next) => {
  await next();
  if (c.res.headers.has("Date")) return;
  try {
    c.res.headers.set("Date", new Date().toUTCString());
  } catch {
    // An immutable answer (a fetched one): copied with the header.
    const headers = new Headers(c.res.headers);
    headers.set("Date", new Date().toUTCString());
    c.res = new Response(c.res.body, { status: c.res.status, statusText: c.res.statusText, headers });
  }
});
