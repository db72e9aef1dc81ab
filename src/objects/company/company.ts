import { DurableObject } from "cloudflare:workers";
import { drizzle, type DrizzleSqliteDODatabase } from "drizzle-orm/durable-sqlite";
import { migrate } from "drizzle-orm/durable-sqlite/migrator";
import migrations from "../../../drizzle-company/migrations.js";
import { DAY_MS } from "../../lib/time";
import { logError } from "../../lib/log";
import { exposureIdBase, type CompanyEvent, type ScanRunEvent, type SiteRow } from "../../domain/company-scans";
import type { BackgroundMessage } from "../../domain/queue-messages";
import {
  HISTORY_RETENTION_DAYS,
  type FinishedDelivery,
  type HistoryAttempt,
  type HistoryFilter,
  type HistoryRow,
} from "../../domain/webhook-history";
import type { ExposureCounts, ExposurePageFilter, ScanSideChunk } from "../../domain/company-scans";
import * as history from "./history";
import * as scans from "./scans";
import * as scheduler from "./scheduler";
import * as exposures from "./exposures";
import { forgetPeople } from "./forget";
import { finishMove, heldPeople, importScanSide, moveUnderWay } from "./scan-import";
import { REMOVAL_CHUNK, REMOVAL_INTERVAL_MS, removalStep } from "./removals";
import { OBJECT_SCAN_RETENTION_DAYS, pruneScanSide } from "./scan-retention";

/*
 * One company's own data, in its own Durable Object with SQLite storage (docs/architecture.md, "The
 * Company object"), named `company:<id>` (stub.ts). D1 stays the directory (companies, accounts,
 * memberships, webhooks); this object keeps what only the company reads: its finished webhook
 * deliveries with their attempts, pruned by its own alarm, so one company's history never waits on
 * another's; and, for a company whose scan side lives here (D1's `companies.scans_in_object`), its
 * employees' scans, results and exposures (scans.ts: the writes, whose webhook events wait in its
 * outbox until the Worker recorded them in D1; exposures.ts: the page, history and counts;
 * removals.ts, scan-retention.ts: its duties; forget.ts; scan-import.ts: the operator's move from D1). Calls to one object run one at a time.
 */

/** How long after an entry falls due the alarm looks (entries go in chunks, not to the millisecond). */
const ALARM_SLACK_MS = 60_000;
/**
 * How long an event may wait in the outbox before the alarm asks the Worker to record it (the
 * Worker forwards right after the change; this is the repair when that failed or never ran).
 */
const EVENTS_REPAIR_AFTER_MS = 60_000;

export class Company extends DurableObject<Env> {
  private readonly db: DrizzleSqliteDODatabase;
  /** The alarm as last set (read from storage once per start); null: none. */
  private alarmAt: number | null = null;
  /**
   * The duties the alarm is running now, each with the due times asked for it meanwhile (an await
   * inside a duty lets other calls in): the alarm keeps the earliest of them once the duty is done.
   */
  private readonly running = new Map<scheduler.Duty, number[]>();
  /** When the removal step last asked the Worker to record its events (null: not since the object woke). */
  private askedAt: number | null = null;
  /** The oldest event waiting when the events duty last looked (null: not since the object woke). */
  private sawOldest: number | null = null;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.db = drizzle(ctx.storage);
    void ctx.blockConcurrencyWhile(async () => {
      await migrate(this.db, migrations);
      this.alarmAt = await ctx.storage.getAlarm();
      // An alarm set before the duties had due times was the history's.
      if (this.alarmAt !== null && scheduler.earliestDue(this.db) === null)
        scheduler.setDue(this.db, "history", this.alarmAt);
    });
  }

  /**
   * The duties of the alarm (scheduler.ts), each run when due, each answering when it is due
   * again (ms; null: not until something schedules it).
   */
  private readonly duties: Record<scheduler.Duty, (now: number) => Promise<number | null> | number | null> = {
    // Retention: entries past their time go, a chunk per alarm, which comes back while any are kept.
    history: (now) => {
      const next = history.prune(this.db, now);
      return next === null ? null : Math.max(next, now) + ALARM_SLACK_MS;
    },
    // Events the Worker did not record in time: the background queue asks it again, then again later,
    // unless the oldest waiting event moved since the last look (a forwarding chain is taking a backlog: a
    // second chain would only take the same events again).
    events: async (now) => {
      const oldest = scans.oldestEvent(this.db);
      if (oldest === null) return null;
      if (oldest.at > now - EVENTS_REPAIR_AFTER_MS) return oldest.at + EVENTS_REPAIR_AFTER_MS;
      const companyId = scans.companyOf(this.db);
      if (companyId === null) return null;
      const moving = this.sawOldest !== null && this.sawOldest !== oldest.seq;
      this.sawOldest = oldest.seq;
      if (!moving) await this.askToRecordEvents();
      return now + EVENTS_REPAIR_AFTER_MS;
    },
    // Pending exposures move to `in_progress`, a chunk an alarm while more are pending; the events
    // raised are recorded through the background queue at once (no request waits on this step).
    removals: async () => {
      // The step's own time, not the alarm's start: an earlier duty's await let calls in, and an exposure
      // found then must not be moved to a time before it was found (a page polled with `since` would skip it).
      const now = Date.now();
      // While a move is under way D1 may still act on what it carried over: the object's own only.
      const companyId = scans.companyOf(this.db);
      const fromId = companyId !== null && moveUnderWay(this.db) ? exposureIdBase(companyId) : 0;
      const { moved, more } = removalStep(this.db, new Date(now), REMOVAL_CHUNK, fromId);
      if (moved > 0) {
        this.dueBy("events", now + EVENTS_REPAIR_AFTER_MS);
        // One forwarding chain at a time: it goes on by itself while events wait (company-events.ts
        // `more`), so a pass right after another does not start a second one taking the same events.
        if (this.askedAt === null || now - this.askedAt >= EVENTS_REPAIR_AFTER_MS) {
          this.askedAt = now;
          await this.askToRecordEvents();
        }
      }
      return more ? now : null;
    },
    "scan-retention": (now) => {
      const { next } = pruneScanSide(this.db, now);
      return next === null ? null : next === now ? now : next + ALARM_SLACK_MS;
    },
  };

  /** Asks the Worker, through the background queue, to record the outbox's events in D1 (services/company-events.ts). */
  private async askToRecordEvents() {
    const companyId = scans.companyOf(this.db);
    if (companyId === null) return;
    const message: BackgroundMessage = { kind: "company-events", companyId };
    await this.env.BACKGROUND_QUEUE.send(message);
  }

  /**
   * Makes `duty` due at `at` at the latest (scheduler.ts `dueBy`). While the alarm runs that duty its
   * stored time is the one being run, so the request is also kept for the alarm to apply after it.
   */
  private dueBy(duty: scheduler.Duty, at: number) {
    scheduler.dueBy(this.db, duty, at);
    this.running.get(duty)?.push(at);
  }

  /** Sets the alarm to the earliest due duty (the one writer of this object's alarm). */
  private async arm() {
    const at = scheduler.earliestDue(this.db);
    if (at === this.alarmAt) return;
    if (at === null) await this.ctx.storage.deleteAlarm();
    else await this.ctx.storage.setAlarm(at);
    this.alarmAt = at;
  }

  /** Keeps finished deliveries handed over by D1 (a repeated hand-over changes nothing). */
  async keepFinished(finished: FinishedDelivery[]): Promise<void> {
    if (finished.length === 0) return;
    history.keep(this.db, finished);
    const first = Math.min(...finished.map((entry) => entry.finishedAt.getTime()));
    this.dueBy("history", first + HISTORY_RETENTION_DAYS.success * DAY_MS + ALARM_SLACK_MS);
    await this.arm();
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

  /**
   * Applies a run of scan events of the company's employees (one transaction, scans.ts), keeping
   * the `sites` it names; returns what happened to each event. Its webhook events wait in the
   * outbox for the Worker (`takeEvents`, `ackEvents`).
   */
  async applyScanRun(companyId: number, events: ScanRunEvent[], sites: SiteRow[]): Promise<string[]> {
    const now = new Date();
    const outcomes = scans.applyRun(this.db, companyId, events, sites, now);
    this.scanSideChanged(now, outcomes.includes("found: exposure created"));
    await this.eventsRaised();
    return outcomes;
  }

  /**
   * Keeps a chunk of the company's scan side carried over from D1 by the operator's move
   * (scan-import.ts; idempotent), its pending exposures then taken by the removal step.
   */
  async importScanSide(companyId: number, chunk: ScanSideChunk): Promise<void> {
    importScanSide(this.db, companyId, chunk);
    this.scanSideChanged(new Date(), false);
    await this.arm();
  }

  /**
   * The operator's move has finished (after its recopy): the removal step takes every pending
   * exposure from now on, the carried-over ones included, from the next hour.
   */
  async moveFinished(): Promise<void> {
    const { pending } = finishMove(this.db);
    this.scanSideChanged(new Date(), pending);
    await this.arm();
  }

  /** The people whose scan rows the object holds (the move's check for former members). */
  heldPeople(): number[] {
    return heldPeople(this.db);
  }

  /**
   * Scan rows were recorded: a pending exposure is taken by the next hourly removal step; what was
   * recorded is looked at by retention once its week has passed.
   */
  private scanSideChanged(now: Date, pending: boolean) {
    if (pending) this.dueBy("removals", Math.ceil((now.getTime() + 1) / REMOVAL_INTERVAL_MS) * REMOVAL_INTERVAL_MS);
    scheduler.dueBy(
      this.db,
      "scan-retention",
      now.getTime() + OBJECT_SCAN_RETENTION_DAYS.results * DAY_MS + ALARM_SLACK_MS,
    );
  }

  /** A site confirmed a removal: `in_progress` → `closed` (scans.ts `confirmRemoval`). */
  async confirmRemoval(exposureId: number, at: Date): Promise<"closed" | "unchanged" | "missing"> {
    const outcome = scans.confirmRemoval(this.db, exposureId, at, new Date());
    if (outcome === "closed") {
      scheduler.dueBy(
        this.db,
        "scan-retention",
        at.getTime() + OBJECT_SCAN_RETENTION_DAYS.closedExposures * DAY_MS + ALARM_SLACK_MS,
      );
      await this.eventsRaised();
    }
    return outcome;
  }

  /** The outbox's oldest events (at most `limit`, and about `maxBytes` of payload), oldest first. */
  takeEvents(limit: number, maxBytes = Number.POSITIVE_INFINITY): CompanyEvent[] {
    return scans.takeEvents(this.db, limit, maxBytes);
  }

  /** The events up to `upToSeq` are recorded in D1: they leave the outbox. */
  ackEvents(upToSeq: number): void {
    scans.ackEvents(this.db, upToSeq);
  }

  /** Which of `ids` are the company's exposures (the scan intake's check). */
  knownExposures(ids: number[]): number[] {
    return scans.knownExposures(this.db, ids);
  }

  /** Events were raised: the alarm looks for them if the Worker has not recorded them in time. */
  private async eventsRaised() {
    this.dueBy("events", Date.now() + EVENTS_REPAIR_AFTER_MS);
    await this.arm();
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

  /** Runs every duty that is due, then sets the alarm to the next one. A duty that fails is tried again later. */
  override async alarm(): Promise<void> {
    // The alarm that fired is spent.
    this.alarmAt = null;
    const now = Date.now();
    const due = scheduler.dueTimes(this.db);
    for (const duty of scheduler.DUTIES) {
      const at = due[duty];
      if (at === undefined || at > now) continue;
      let next: number | null;
      const asked: number[] = [];
      this.running.set(duty, asked);
      try {
        next = await this.duties[duty](now);
      } catch (err) {
        logError("a company object's duty failed; tried again later", err, { duty });
        next = now + ALARM_SLACK_MS;
      } finally {
        this.running.delete(duty);
      }
      // Something scheduled the duty again while it ran (an await lets other calls in): the earliest stands.
      for (const wanted of asked) next = next === null ? wanted : Math.min(next, wanted);
      scheduler.setDue(this.db, duty, next);
    }
    await this.arm();
  }
}
