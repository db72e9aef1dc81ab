import { z } from "@hono/zod-openapi";
import { PushJob } from "./push";

/**
 * Messages of the `background` queue: work that continues after the
 * invocation that started it (docs/architecture.md, "Background work").
 *
 * - `reindex`: apply trust-index work for these keys (a retry after KV
 *   refused a write), or, when `keys` is absent, the next chunk of the index
 *   sweep (the oldest due work), and another `reindex` while chunks are full;
 * - `purge`: remove the next chunk of expired ephemeral employees, and
 *   enqueue another `purge` while some remain;
 * - `retention`: another bounded pass of the retention rules, and another
 *   `retention` while a backlog remains (docs/capacity.md, "Retention");
 * - `removals`, `outbox`, `tombstones`: the next chunk of the removal
 *   requests, the outbox sweep, the tombstone prune, and another of the same
 *   kind while the chunk was full;
 * - `redrive`: retry the oldest due dead letter (`dead_letters`), and
 *   another `redrive` while more are due;
 * - `move-people`, `move-person`: the one-time move of people's activity and
 *   blocked calls from D1 into their objects (services/person-moves.ts);
 * - `hand-over-history`: hand the next chunk of finished webhook deliveries
 *   from D1 to their companies' objects, and another while chunks are full
 *   (services/webhook-delivery/archive.ts; the minute sweep and the
 *   operator's company move);
 * - `move-company-scans`: the next chunk of the operator's move of an older company's scan side
 *   from D1 into its object (`stage`: copy, then the flip and a copy again, then D1's rows
 *   cleaned; ~100 members a chunk from `afterPerson`), then the next company still served from D1
 *   (services/company-scan-moves.ts);
 * - `company-events`: record the events waiting in a company's object as
 *   webhook deliveries in D1 (services/company-events.ts; sent by the
 *   object's alarm when the Worker did not do it right after the change),
 *   and another while chunks are full;
 * - `erase-persons`: erase the objects of accounts that are gone
 *   (`person_erasures`), and another while more are due;
 * - `forget-people`: tell companies' objects to forget people whose
 *   membership ended (`company_forgets`; services/company-forgets.ts), and
 *   another while more are due;
 * - `rebuild-index`: the next chunk of the trust-index rebuild, and another
 *   until every key is written and the index is marked complete
 *   (services/index-rebuild.ts);
 * - `push`: wake one device about one event (domain/push.ts; queued by the
 *   person's object, sent by services/push/), retried while it is young;
 * - `invitations`: the login invitations' emails that are due
 *   (services/invitations.ts; asked by the employee command, and hourly).
 *
 * Every kind is one bounded chunk per message: the `background` consumer
 * takes one message per invocation (wrangler.toml).
 */
export const backgroundMessage = z.discriminatedUnion("kind", [
  z.object({ kind: z.literal("reindex"), keys: z.array(z.string()).max(1000).optional() }),
  z.object({ kind: z.literal("purge") }),
  z.object({ kind: z.literal("retention") }),
  z.object({ kind: z.literal("removals") }),
  z.object({ kind: z.literal("outbox") }),
  z.object({ kind: z.literal("tombstones") }),
  z.object({ kind: z.literal("redrive") }),
  z.object({ kind: z.literal("move-people"), after: z.number().int().min(0) }),
  z.object({
    kind: z.literal("move-person"),
    personId: z.number().int().positive(),
    stage: z.enum(["feed", "blocked", "requests", "contacts", "tombstones", "decisions", "compare"]),
    after: z.number().int().min(0),
  }),
  z.object({ kind: z.literal("erase-persons") }),
  z.object({ kind: z.literal("hand-over-history") }),
  z.object({ kind: z.literal("invitations") }),
  z.object({ kind: z.literal("company-events"), companyId: z.number().int().positive() }),
  z.object({
    kind: z.literal("move-company-scans"),
    companyId: z.number().int().positive(),
    stage: z.enum(["copy", "recopy", "clean"]),
    /** The last member (person id) of the stage done. */
    afterPerson: z.number().int().min(0),
  }),
  z.object({ kind: z.literal("forget-people") }),
  z.object({
    kind: z.literal("rebuild-index"),
    stage: z.enum(["people", "numbers", "companies"]),
    /** The last person id (`people`) or index key (`numbers`, `companies`: `num:`, `eml:`, `lnk:`, `co:`) done. */
    after: z.string().max(320),
    /** The range of the stage this chain works on (absent: the stage's one range). */
    range: z.number().int().min(0).max(63).optional(),
    /** The range's last key (absent: up to the stage's end). */
    until: z.string().max(320).optional(),
  }),
  PushJob,
]);

export type BackgroundMessage = z.infer<typeof backgroundMessage>;

/** What one chunk of a background job did (services/background-jobs.ts and the jobs it runs). */
export type Chunk = {
  /** What the chunk did, for its log line. */
  done: Record<string, unknown>;
  /** The message that continues the job (the chunk was full). */
  next?: BackgroundMessage;
  /** Some of the work failed in a way worth retrying this very message for (KV refused keys). */
  retry?: boolean;
};

/** A message of the `webhook-deliveries` queue: one history row to attempt (src/queue/webhook-deliveries.ts). */
export const deliveryMessage = z.object({ kind: z.literal("deliver"), deliveryId: z.string().min(1) });
export type DeliveryMessage = z.infer<typeof deliveryMessage>;

/**
 * A message of the `scan-events` queue: a slice of a batch posted to
 * `POST /internal/scan-events`, as it was posted; the consumer validates it
 * again (`ScanEventBatch`, src/domain/scan-events.ts) before applying it.
 */
export type ScanEventsMessage = unknown[];

/**
 * A token's use of the day on its way to D1 (the `token-uses` queue, docs/architecture.md,
 * "Tokens"): `h` the token's hash, `at` the request's time (ms).
 */
export type TokenUseMessage = { h: string; at: number };

/** Messages one `sendBatch` takes at most (https://developers.cloudflare.com/queues/platform/limits/). */
export const SEND_BATCH_MAX = 100;
