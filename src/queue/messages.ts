import { z } from "@hono/zod-openapi";

/**
 * Messages of the `background` queue: work that continues after the
 * invocation that started it (docs/architecture.md, "Background work").
 *
 * - `reindex`: apply trust-index work for these keys (a retry after KV
 *   refused a write), or the oldest due work when `keys` is absent;
 * - `purge`: remove the next chunk of expired ephemeral employees, and
 *   enqueue another `purge` while some remain;
 * - `retention`: another bounded pass of the retention rules, and another
 *   `retention` while a backlog remains (docs/capacity.md, "Retention").
 */
export const backgroundMessage = z.discriminatedUnion("kind", [
  z.object({ kind: z.literal("reindex"), keys: z.array(z.string()).max(1000).optional() }),
  z.object({ kind: z.literal("purge") }),
  z.object({ kind: z.literal("retention") }),
]);

export type BackgroundMessage = z.infer<typeof backgroundMessage>;
