import { sql } from "drizzle-orm";
import type { DrizzleSqliteDODatabase } from "drizzle-orm/durable-sqlite";
import type { AnySQLiteColumn } from "drizzle-orm/sqlite-core";
import { KEY_RETRY } from "../../domain/key-kinds";
import { backoff } from "../../lib/backoff";
import { logError } from "../../lib/log";
import * as budgets from "./budgets";
import * as idempotency from "./idempotency";
import * as keys from "./index-keys";
import type { KeyWriter } from "./index-writer";
import { DAY_MS, KEEP } from "./limits";
import * as requests from "./requests";
import { blockedCalls, contactTombstones, devices, feed, peers, trustRequests } from "./schema";
import type { Self } from "./self";
import type { Stream } from "./stream";
import * as trust from "./trust";

/** The alarm's retry of deliveries that failed (keys, mirrors, requests): the index's one retry (domain/key-kinds.ts). */
const RETRY = KEY_RETRY;

/*
 * What the object does after a commit and on its own alarm: the deliveries
 * others wait for (index keys, mirrors, trust requests), each retried by the
 * alarm until it lands (1 s, doubling with the attempts, at most 60 s), and
 * the retention (blocked calls 90 days, activity 365 days, trust requests not
 * asked again for 365 days, tombstones 90 days, idempotency keys a day,
 * budget days before yesterday, people not heard from for 365 days, devices
 * 30 days after they were revoked or expired), at most `PRUNE_CHUNK` rows per table per
 * alarm; while a table had a full chunk the next alarm follows at once,
 * otherwise in a day. A socket whose token expires closes at that time; no
 * other socket asks for an alarm.
 */

/** Rows one alarm deletes per table before it hands over to the next alarm. */
const PRUNE_CHUNK = 1_000;

export type SchedulerHost = {
  ctx: DurableObjectState;
  db: DrizzleSqliteDODatabase;
  self: Self;
  stream: Stream;
  writer: KeyWriter;
};

export class Scheduler {
  /** The alarm's changes asked and not yet done, in order (`alarms`). */
  private queue: Promise<void> = Promise.resolve();

  constructor(private readonly host: SchedulerHost) {}

  /** The alarm: first what others wait for, then the retention, then the streams' tokens. */
  async run(): Promise<void> {
    const { db } = this.host;
    await Promise.all([this.makeKeysCurrent(), this.sendMirrors(), this.sendRequests()]);
    const now = Date.now();
    const chunk = (
      table: typeof feed | typeof blockedCalls | typeof trustRequests | typeof contactTombstones | typeof peers,
      column: AnySQLiteColumn,
      days: number,
    ) =>
      db
        .delete(table)
        .where(sql`rowid in (select rowid from ${table} where ${column} < ${now - days * DAY_MS} limit ${PRUNE_CHUNK})`)
        .returning({ at: sql`1` })
        .all().length;
    const pruned = [
      chunk(blockedCalls, blockedCalls.createdAt, KEEP.blockedCallDays),
      chunk(feed, feed.createdAt, KEEP.activityDays),
      chunk(trustRequests, trustRequests.updatedAt, KEEP.trustRequestDays),
      chunk(contactTombstones, contactTombstones.deletedAt, KEEP.tombstoneDays),
      chunk(peers, peers.learnedAt, KEEP.peerDays),
      db
        .delete(devices)
        .where(
          sql`rowid in (select rowid from ${devices} where coalesce(${devices.revokedAt}, ${devices.expiresAt}) < ${now - KEEP.endedDeviceDays * DAY_MS} limit ${PRUNE_CHUNK})`,
        )
        .returning({ at: sql`1` })
        .all().length,
      idempotency.prune(db, now, PRUNE_CHUNK),
    ];
    budgets.pruneDays(db, now);
    const more = pruned.some((n) => n >= PRUNE_CHUNK);
    await this.alarmAt(now + (more ? 1_000 : DAY_MS));
    await this.retryLater();
    await this.checkStreams();
  }

  /**
   * Writes the due index keys (after any write under way); the keys left due (refused, or written
   * less than a second ago: db/kv-writes.ts) go when the alarm comes at their `nextAt`.
   */
  makeKeysCurrent(): Promise<void> {
    if (this.host.self.erased) return Promise.resolve();
    return this.host.writer.makeCurrent().then(
      ({ nextAt }) => (nextAt !== null ? this.alarmBy(nextAt) : undefined),
      (err: unknown) => {
        logError("writing the trust index failed; the object's alarm retries it", err);
        return this.retryLater();
      },
    );
  }

  /** Sends the mirrors not yet delivered to the people they are about; a failure waits for the alarm. */
  async sendMirrors(): Promise<void> {
    const { db, self } = this.host;
    if (await trust.sendMirrors(db, self.known(), (id) => self.peer(id))) await this.retryLater();
  }

  /** Sends the trust requests not yet delivered; a failure waits for the alarm. */
  async sendRequests(): Promise<void> {
    const { db, self } = this.host;
    // Each request carries this person's names (self.card), read from D1 once if never told.
    if (requests.queuedCount(db) > 0) await self.profile();
    if (await requests.sendQueued(db, (id) => self.peer(id), self.card())) await this.retryLater();
  }

  /**
   * Delivers the queued trust requests after the asking request has been answered (`waitUntil`), so
   * the answer takes the same time whether a target is an account or not (docs/decisions.md). The
   * queue is durable: a delivery that fails or never runs is retried by the alarm.
   */
  deliverRequests(): void {
    const delivering = this.sendRequests().catch(() => this.retryLater());
    this.host.ctx.waitUntil(Promise.all([delivering, this.alarmBy(Date.now() + RETRY.cap)]));
  }

  /** Brings the alarm forward while index writes, mirrors or requests are due: `RETRY` (1 s, doubling, at most 60 s). */
  async retryLater(): Promise<void> {
    const { db } = this.host;
    const { due, attempts } = keys.dueState(db);
    if (!due && trust.mirrorsQueued(db) === 0 && requests.queuedCount(db) === 0) return;
    await this.alarmBy(Date.now() + backoff(attempts, RETRY));
  }

  /**
   * Sets the alarm to `when` unless it is set to go off sooner. The alarm's reads and sets run one after
   * another (`alarms`), so two calls never both read before either sets and leave the later time; an
   * erased object sets none.
   */
  alarmBy(when: number): Promise<void> {
    return this.alarms(async (storage) => {
      const at = await storage.getAlarm();
      if (at === null || at > when) await storage.setAlarm(when);
    });
  }

  /** The alarm's next time, whatever it was: the alarm itself, after its run. */
  private alarmAt(when: number): Promise<void> {
    return this.alarms((storage) => storage.setAlarm(when));
  }

  /** The erasure: no alarm any more (and none set after, `alarms`). */
  clear(): Promise<void> {
    return this.alarms((storage) => storage.deleteAlarm(), true);
  }

  /** The alarm's changes, in the order asked; the object's only writer of its alarm (test/platform/architecture.test.ts). */
  private alarms(change: (storage: DurableObjectStorage) => Promise<void>, erasing = false): Promise<void> {
    const next = this.queue.then(() => (erasing || !this.host.self.erased ? change(this.host.ctx.storage) : undefined));
    this.queue = next.catch(() => undefined);
    return next;
  }

  /** The alarm at once (a lookup's missed keys, written again right after its answer). */
  readonly soon = () => this.alarmBy(Date.now());

  /** Makes sure a retention alarm is set (the first write sets it; each alarm sets the next, at most a day ahead). */
  care(): void {
    void this.alarmBy(Date.now() + DAY_MS);
  }

  /** A stream opened with a token that expires at `until`: the alarm closes it then. */
  watchStreams(until: number | undefined): Promise<void> {
    return until === undefined ? Promise.resolve() : this.alarmBy(until);
  }

  /** Closes the sockets whose token expired, and asks to be woken when the next one does. */
  private async checkStreams(): Promise<void> {
    const next = this.host.stream.closeExpired();
    if (next !== null) await this.alarmBy(next);
  }
}
