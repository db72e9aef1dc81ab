import { sql } from "drizzle-orm";
import type { DrizzleSqliteDODatabase } from "drizzle-orm/durable-sqlite";
import { historyPrefix, toExposureFromText } from "../../domain/scan-payloads";
import { countStatusChange, itemColumns, toItem, type ItemRow } from "./exposures";
import { raiser } from "./scans";

/*
 * The removal step of a company whose scan side lives in its object (docs/decisions.md, "Removal
 * requests"): the company's pending exposures move to `in_progress`, oldest change first, a chunk
 * per call, each with its history line and its `exposure:requested` + `request:created` events in
 * the object's outbox, all in one transaction. A duty of the object's alarm, hourly as D1's cron
 * step: each company's object runs its own, so one company's backlog never delays another's.
 */

type Db = DrizzleSqliteDODatabase;

/** Exposures one call of the removal step moves (as D1's step moves per invocation). */
export const REMOVAL_CHUNK = 1000;

/** How often the removal step is due (the hourly cron's pace for D1's companies). */
export const REMOVAL_INTERVAL_MS = 3600_000;

/**
 * Moves up to `limit` pending exposures to `in_progress` at `now` (by `exposures_status_idx`,
 * oldest change first): the history line "Removal requested from <site>", the move, the counters
 * and both events (payload: the exposure as moved, exactly D1's step's) in one transaction, so a
 * repeated call moves and reports each exposure once. Returns how many moved and whether any are
 * still pending (the step is then due again at once). Only ids from `fromId` are taken: while the
 * operator's move of the company is under way, the object's own (scan-import.ts `moveUnderWay`).
 */
export function removalStep(db: Db, now: Date, limit = REMOVAL_CHUNK, fromId = 0): { moved: number; more: boolean } {
  const at = now.getTime();
  return db.transaction((tx) => {
    const rows = tx
      .all<ItemRow>(
        sql`select ${itemColumns}
            from (select id from exposures indexed by exposures_status_idx
                  where status = 'pending' and id >= ${fromId} order by updated_at, id limit ${limit}) p
            join exposures e on e.id = p.id
            join sites s on s.id = e.site_id
            order by e.updated_at, e.id`,
      )
      .map(toItem);
    if (rows.length > 0) {
      const ids = JSON.stringify(rows.map((row) => row.id));
      tx.run(
        sql`insert into exposure_history (exposure_id, site_id, event, created_at)
            select e.id, e.site_id, ${historyPrefix.requested} || s.name, ${at}
            from exposures e join sites s on s.id = e.site_id
            where e.id in (select value from json_each(${ids})) order by e.updated_at, e.id`,
      );
      tx.run(
        sql`update exposures set status = 'in_progress', requested_at = ${at}, updated_at = ${at}
            where id in (select value from json_each(${ids})) and status = 'pending'`,
      );
      countStatusChange(tx, "pending", "in_progress", rows.length);
      const raise = raiser(tx, now);
      for (const row of rows) {
        const exposure = toExposureFromText({ ...row, status: "in_progress", updatedAt: now });
        raise("exposure:requested", exposure);
        raise("request:created", exposure);
      }
    }
    const more =
      tx.get<{ id: number }>(sql`select id from exposures where status = 'pending' and id >= ${fromId} limit 1`) !==
      undefined;
    return { moved: rows.length, more };
  });
}
