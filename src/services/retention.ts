import type { Db } from "../db/client";
import { pruneOlderThan, type PruneResult } from "../db/prune";
import { activities, blockedCalls, invitations, oneTimeCodes } from "../db/schema";
import { logError } from "../lib/log";
import { pruneExpiredClaims } from "./company-phones";
import { pruneCompanyKeys } from "./idempotency";
import { pruneClosedExposures, pruneFinishedScans, pruneSupersededResults } from "./scan-retention";
import { pruneIndexWritten } from "./trust-index/current";
import { pruneDeliveredHistory } from "./webhook-history";
import { DAY_MS } from "../lib/time";
import type { Deps } from "./deps";

/** How long records are kept (docs/decisions.md). */
export const RETENTION_DAYS = { blockedCalls: 90, activities: 365, finishedInvitations: 30 } as const;

/**
 * D1 statements each rule may run per invocation (× 1,000 rows each): the
 * rules together stay under half of the invocation's 1,000, leaving room for
 * the other daily jobs.
 */
export const RETENTION_STATEMENTS_PER_RULE = 40;

const before = (now: Date, days: number) => new Date(now.getTime() - days * DAY_MS);

/**
 * The retention rules, each pruning its table's due rows oldest-time-first
 * through an index on the age column. Exposure history needs no rule of
 * its own: it goes with its exposure (foreign key, ON DELETE CASCADE), and an
 * open exposure is never pruned.
 */
const RULES = {
  blockedCalls: (db: Db, now: Date, maxStatements: number) =>
    pruneOlderThan(db, {
      table: blockedCalls,
      column: blockedCalls.createdAt,
      cutoff: before(now, RETENTION_DAYS.blockedCalls),
      maxStatements,
    }),
  activities: (db: Db, now: Date, maxStatements: number) =>
    pruneOlderThan(db, {
      table: activities,
      column: activities.createdAt,
      cutoff: before(now, RETENTION_DAYS.activities),
      maxStatements,
    }),
  deliveredWebhooks: (db: Db, now: Date, maxStatements: number) =>
    pruneDeliveredHistory(db, now, "success", { maxStatements }),
  failedWebhooks: (db: Db, now: Date, maxStatements: number) =>
    pruneDeliveredHistory(db, now, "failed", { maxStatements }),
  finishedScans: (db: Db, now: Date, maxStatements: number) => pruneFinishedScans(db, now, { maxStatements }),
  supersededScanResults: (db: Db, now: Date, maxStatements: number) =>
    pruneSupersededResults(db, now, { maxStatements }),
  closedExposures: (db: Db, now: Date, maxStatements: number) => pruneClosedExposures(db, now, { maxStatements }),
  indexWritten: (db: Db, now: Date, maxStatements: number) => pruneIndexWritten(db, now, { maxStatements }),
  // Company phone claims still pending after 30 days have expired (docs/decisions.md, "Company phones").
  expiredPhoneClaims: pruneExpiredClaims,
  idempotencyKeys: pruneCompanyKeys,
  // An invitation's row is its sending's record (services/invitations.ts): kept a month after it finished.
  finishedInvitations: (db: Db, now: Date, maxStatements: number) =>
    pruneOlderThan(db, {
      table: invitations,
      column: invitations.finishedAt,
      cutoff: before(now, RETENTION_DAYS.finishedInvitations),
      maxStatements,
    }),
  // One-time codes: a code lives 10 minutes, its row counts toward the limits for a day (docs/security.md).
  oneTimeCodes: (db: Db, now: Date, maxStatements: number) =>
    pruneOlderThan(db, {
      table: oneTimeCodes,
      column: oneTimeCodes.createdAt,
      cutoff: before(now, 1),
      maxStatements,
    }),
} satisfies Record<string, (db: Db, now: Date, maxStatements: number) => Promise<PruneResult>>;

/** How many rules a pass runs (each at most `RETENTION_STATEMENTS_PER_RULE` statements). */
export const RETENTION_RULE_COUNT = Object.keys(RULES).length;

export type RetentionRun = {
  /** Rows deleted per rule; null when the rule failed (logged; its rows wait for the next run). */
  pruned: Record<keyof typeof RULES, number | null>;
  statements: number;
  /** Some rule used its whole budget: the caller enqueues a `retention` message to continue. */
  more: boolean;
};

/**
 * One bounded pass of every retention rule (the daily cron, then `retention`
 * messages on the background queue while a backlog remains). A failing rule
 * is logged and the others still run.
 */
export async function pruneExpired(
  { db }: Deps,
  now: Date,
  maxStatementsPerRule = RETENTION_STATEMENTS_PER_RULE,
): Promise<RetentionRun> {
  const run: RetentionRun = {
    pruned: Object.fromEntries(Object.keys(RULES).map((name) => [name, null])) as RetentionRun["pruned"],
    statements: 0,
    more: false,
  };
  for (const [name, rule] of Object.entries(RULES) as [keyof typeof RULES, (typeof RULES)[keyof typeof RULES]][]) {
    try {
      const result = await rule(db, now, maxStatementsPerRule);
      run.pruned[name] = result.pruned;
      run.statements += result.statements;
      run.more ||= result.more;
    } catch (err) {
      logError(`retention rule ${name} failed`, err, { rule: name });
    }
  }
  return run;
}
