import { sql, type SQL } from "drizzle-orm";
import { deadLetters, exposures, indexWork, webhookDeliveries } from "../db/schema";
import { batchableAll } from "../db/sql";
import type { Deps } from "./deps";

/**
 * How far behind the background work is (docs/architecture.md, "Watching
 * the backlog"): per kind of due work, how many items (counted up to
 * `COUNT_CAP`, so reading it stays cheap whatever the backlog) and the age
 * of the oldest. `GET /internal/status` answers it (`npm run admin --
 * status`), and the minute cron logs it as one metric line.
 */
export const COUNT_CAP = 10_000;

export type Backlog = {
  /** Items due, exact up to `COUNT_CAP`; `capped`: at least that many. */
  count: number;
  capped: boolean;
  /** When the oldest item became due, and how long ago (null: none). */
  oldest_at: string | null;
  oldest_age_seconds: number | null;
};

export type BackgroundStatus = {
  at: string;
  /** Trust-index keys KV does not have right yet (`index_work`), oldest by when they became stale. */
  index_work: Backlog;
  /** Webhook history rows still `pending` (not yet handed to the delivery queue, or handed back). */
  outbox: Backlog;
  /** Exposures waiting for their removal request. */
  removals: Backlog;
  /** Dead letters kept for a redrive (`dead_letters`). */
  dead_letters: Backlog;
};

const capped = (from: SQL) => sql<number>`(select count(*) from (select 1 ${from} limit ${COUNT_CAP + 1}))`;

/**
 * One D1 round of four reads, each bounded: counts stop after `COUNT_CAP`
 * + 1 rows, and the oldest item is found through an index (`index_work` by
 * `created_at`, pending exposures by id), except for pending history rows
 * (the oldest among the `COUNT_CAP` least recently touched) and dead letters
 * (a small table).
 */
export async function backgroundStatus({ db }: Deps, now: Date): Promise<BackgroundStatus> {
  type Row = { n: number; oldest: number | null };
  const [index, outbox, removals, letters] = (await db.batch([
    batchableAll<Row>(
      db,
      sql`select ${capped(sql`from ${indexWork}`)} as n, (select min(created_at) from ${indexWork}) as oldest`,
    ),
    batchableAll<Row>(
      db,
      sql`
      select ${capped(sql`from ${webhookDeliveries} where status = 'pending'`)} as n,
        (select min(created_at) from (select created_at from ${webhookDeliveries} where status = 'pending'
          order by updated_at limit ${COUNT_CAP})) as oldest`,
    ),
    batchableAll<Row>(
      db,
      sql`
      select ${capped(sql`from ${exposures} where status = 'pending'`)} as n,
        (select created_at from ${exposures} where status = 'pending' order by id limit 1) as oldest`,
    ),
    batchableAll<Row>(
      db,
      sql`select ${capped(sql`from ${deadLetters}`)} as n, (select min(created_at) from ${deadLetters}) as oldest`,
    ),
  ])) as Row[][];
  const backlog = ([row]: Row[] = []): Backlog => {
    const oldest = row?.oldest ?? null;
    const n = row?.n ?? 0;
    return {
      count: Math.min(n, COUNT_CAP),
      capped: n > COUNT_CAP,
      oldest_at: oldest === null ? null : new Date(oldest).toISOString(),
      oldest_age_seconds: oldest === null ? null : Math.max(0, Math.floor((now.getTime() - oldest) / 1000)),
    };
  };
  return {
    at: now.toISOString(),
    index_work: backlog(index),
    outbox: backlog(outbox),
    removals: backlog(removals),
    dead_letters: backlog(letters),
  };
}
