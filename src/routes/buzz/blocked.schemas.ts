import { z } from "@hono/zod-openapi";

/** `GET /apps/buzz/blocked`: the calls blocked past the number's share, counted and not listed. */
export const UNLISTED_BLOCKED = "Unlisted-Blocked-Calls";
export const UnlistedBlockedHeaders = z.object({
  [UNLISTED_BLOCKED]: z.string().openapi({
    description:
      "Calls to the caller's number blocked beyond its share of the provider's budget (docs/decisions.md, " +
      '"The provider\'s budget"): counted, not listed. A structured-field dictionary: `today` (UTC) and `total`.',
    example: "today=0, total=0",
  }),
});
