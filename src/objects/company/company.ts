import { DurableObject } from "cloudflare:workers";
import { drizzle, type DrizzleSqliteDODatabase } from "drizzle-orm/durable-sqlite";
import { migrate } from "drizzle-orm/durable-sqlite/migrator";
import migrations from "../../../drizzle-company/migrations.js";
import { DAY_MS } from "../../lib/time";
import {
  HISTORY_RETENTION_DAYS,
  type FinishedDelivery,
  type HistoryAttempt,
  type HistoryFilter,
  type HistoryRow,
} from "../../domain/webhook-history";
import type { ExposureCounts, ExposurePageFilter } from "../../domain/company-scans";
import * as history from "./history";
import * as exposures from "./exposures";
import { forgetPeople } from "./forget";

/*
 * One company's own data, in its own Durable Object with SQLite storage (docs/architecture.md, "The
 * Company object"), named `company:<id>` (stub.ts). D1 stays the directory (companies, accounts,
 * memberships, webhooks); this object keeps what only the company reads: its finished webhook
 * deliveries with their attempts, pruned by its own alarm, so one company's history never waits on
 * another's; and, for a company created since migration 0032, its scan side (exposures.ts: the
 * exposures page, history and counts; removals.ts, scan-retention.ts: its duties; forget.ts).
 * Calls to one object run one at a time.
 */

/** How long after an entry falls due the alarm looks (entries go in chunks, not to the millisecond). */
const ALARM_SLACK_MS = 60_000;

export class Company extends DurableObject<Env> {
  private readonly db: DrizzleSqliteDODatabase;
  /** Whether an alarm is known to be set (read from storage once per start). */
  private alarmSet = false;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.db = drizzle(ctx.storage);
    void ctx.blockConcurrencyWhile(async () => {
      await migrate(this.db, migrations);
      this.alarmSet = (await ctx.storage.getAlarm()) !== null;
    });
  }

  /** Keeps finished deliveries handed over by D1 (a repeated hand-over changes nothing). */
  async keepFinished(finished: FinishedDelivery[]): Promise<void> {
    if (finished.length === 0) return;
    history.keep(this.db, finished);
    if (!this.alarmSet) {
      const first = Math.min(...finished.map((entry) => entry.finishedAt.getTime()));
      await this.ctx.storage.setAlarm(first + HISTORY_RETENTION_DAYS.success * DAY_MS + ALARM_SLACK_MS);
      this.alarmSet = true;
    }
  }

  /** Finished entries matching `filter`, newest first, `limit` of them from `offset`, and how many match. */
  history(filter: HistoryFilter, offset: number, limit: number): { total: number; rows: HistoryRow[] } {
    return history.newest(this.db, filter, offset, limit);
  }

  /** One finished entry with its attempts; null when the company has none such. */
  entry(id: string): { row: HistoryRow; attempts: HistoryAttempt[] } | null {
    return history.entry(this.db, id);
  }

  /** A resend took the entry back to D1: it stops answering for it until it is handed over again. */
  markResent(id: string): boolean {
    return history.markResent(this.db, id);
  }

  /** One page of the company's exposures, oldest change first, with their sites, and how many match (exposures.ts). */
  exposurePage(filter: ExposurePageFilter, offset: number, limit: number) {
    return exposures.exposurePage(this.db, filter, offset, limit);
  }

  /** One exposure's history, oldest first, each line with its site; null when the company has no such exposure. */
  exposureHistory(exposureId: number) {
    return exposures.exposureHistory(this.db, exposureId);
  }

  /** Per person asked: exposures by status and sites not found, for the Person resource. */
  exposureCounts(personIds: number[]): ExposureCounts[] {
    return exposures.exposureCounts(this.db, personIds);
  }

  /** Their membership ended at `before`: the people's scan side recorded until then goes (forget.ts). */
  forgetPeople(personIds: number[], before: Date): number {
    return forgetPeople(this.db, personIds, before);
  }

  /** Retention: entries past their time go, a chunk per alarm, which comes back while any are kept. */
  override async alarm(): Promise<void> {
    const now = Date.now();
    const next = history.prune(this.db, now);
    this.alarmSet = next !== null;
    if (next !== null) await this.ctx.storage.setAlarm(Math.max(next, now) + ALARM_SLACK_MS);
  }
}
