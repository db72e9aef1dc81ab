import { DurableObject } from "cloudflare:workers";
import { and, asc, desc, eq, gt, lt, sql } from "drizzle-orm";
import { drizzle, type DrizzleSqliteDODatabase } from "drizzle-orm/durable-sqlite";
import type { AnySQLiteColumn } from "drizzle-orm/sqlite-core";
import { migrate } from "drizzle-orm/durable-sqlite/migrator";
import migrations from "../../../drizzle-person/migrations.js";
import type { ActivityInput } from "../../services/activities";
import { nextId } from "./ids";
import { ACTIVITY_BUDGET, KEEP, MAX_TRUST_REQUESTS_PER_DAY } from "./limits";
import { personObjectName } from "./name";
import { activityDays, blockedCalls, feed, trustRequestDays, trustRequests } from "./schema";

/*
 * One file past 400 lines on purpose: a Durable Object class is one service
 * of its own, and its RPC methods share the object's state and helpers.
 *
 * One person's own data, in their own Durable Object with SQLite storage
 * (docs/architecture.md, "Where data lives"): their activity feed, the calls
 * blocked for them and their daily activity budget. The Worker reaches it by
 * RPC through `deps.persons` (services/persons.ts); requests for one person
 * run one at a time here, so checks and writes need no guard. Every method
 * says what it changes; none awaits between its reads and its writes, except
 * sendChat, which says how it stays correct across its one await.
 */

export type FeedRow = typeof feed.$inferSelect;
export type BlockedCallRow = { callerId: string | null; countryCode: string; phoneNumber: string; createdAt: number };
/** A trust request moved in from D1: its D1 id, its times in milliseconds. */
export type MovedTrustRequestRow = Omit<TrustRequestRow, "decidedAt" | "createdAt" | "updatedAt"> & {
  decidedAt: number | null;
  createdAt: number;
  updatedAt: number;
};
/** A row moved in from D1: its D1 id, its time in milliseconds. */
export type MovedFeedRow = Omit<FeedRow, "createdAt"> & { createdAt: number };

export type TrustRequestRow = typeof trustRequests.$inferSelect;
/** Rows one alarm deletes per table before it hands over to the next alarm. */
const PRUNE_CHUNK = 1_000;
/** Ids below this came from D1 (the move); ids this object makes are time-based and far above (ids.ts). */
export const MOVED_ID_LIMIT = 2 ** 40;
const DAY_MS = 24 * 3600 * 1000;
/** Days since 1970-01-01 in UTC: the key of the daily counters. */
const utcDay = (ms: number) => Math.floor(ms / DAY_MS);
/** Seconds from `ms` until the next UTC day starts (the `Retry-After` of a spent daily budget). */
const secondsToNextDay = (ms: number) => Math.ceil(((utcDay(ms) + 1) * DAY_MS - ms) / 1000);

/** The answer to a write the object may refuse: refusals are values, since errors lose their class over RPC. */
export type RecordResult =
  | { ok: true; row: FeedRow }
  | { ok: false; status: 409; message: string }
  | { ok: false; status: 429; message: string; retryAfter: number };

const utf8Bytes = (text: string | null | undefined) => (text ? new TextEncoder().encode(text).length : 0);

export class Person extends DurableObject<Env> {
  private readonly db: DrizzleSqliteDODatabase;
  /** Messages being sent right now, by their idempotency key (see `record`). */
  private readonly sending = new Map<string, Promise<RecordResult>>();

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.db = drizzle(ctx.storage);
    // The object's own tables, migrated before any call reaches it.
    void ctx.blockConcurrencyWhile(async () => {
      await migrate(this.db, migrations);
    });
  }

  /* ---------- activity ---------- */

  /**
   * Records an activity `me` wrote (a call record, or a chat they send),
   * idempotently on (sender, `message_id`). A chat to another person is
   * first accepted by that person's object (`peer`), so both feeds hold it
   * under one id before this answers. Charged to today's budget.
   */
  async record(me: number, input: ActivityInput, peer: number | null): Promise<RecordResult> {
    // The same message sent again while the first is still on its way to the peer: one answer for both.
    const key = input.message_id ? `${input.sendable_type}:${input.sendable_id}:${input.message_id}` : null;
    const inflight = key ? this.sending.get(key) : undefined;
    if (inflight) return inflight;
    const work = this.recordOnce(me, input, peer);
    if (!key) return work;
    this.sending.set(key, work);
    try {
      return await work;
    } finally {
      this.sending.delete(key);
    }
  }

  private async recordOnce(me: number, input: ActivityInput, peer: number | null): Promise<RecordResult> {
    const earlier = this.sameMessage(input);
    if (earlier) return earlier;
    const now = Date.now();
    const day = utcDay(now);
    const bytes = utf8Bytes(input.message);
    const spent = this.db.select().from(activityDays).where(eq(activityDays.day, day)).get();
    if (
      (spent?.records ?? 0) + 1 > ACTIVITY_BUDGET.records ||
      (spent?.textBytes ?? 0) + bytes > ACTIVITY_BUDGET.textBytes
    ) {
      return {
        ok: false,
        status: 429,
        message:
          `a person may record at most ${ACTIVITY_BUDGET.records} activities and 10 MiB of message text per day (UTC), ` +
          `and this one would pass today's budget; retry after midnight UTC (see Retry-After)`,
        retryAfter: secondsToNextDay(now),
      };
    }
    // Charged before the chat's await, so concurrent requests cannot pass the budget together.
    this.charge(day, 1, bytes);
    const row: FeedRow = {
      id: 0,
      type: input.type,
      sendableType: input.sendable_type,
      sendableId: input.sendable_id,
      receivableType: input.receivable_type,
      receivableId: input.receivable_id,
      callTime: input.call_time,
      message: input.message ?? null,
      messageId: input.message_id ?? null,
      createdAt: new Date(now),
    };
    try {
      row.id = peer === null || peer === me ? nextId(me, this.lastId()) : await this.sendChat(me, row, peer);
    } catch (err) {
      this.charge(day, -1, -bytes);
      throw err;
    }
    const inserted = this.db.insert(feed).values(row).onConflictDoNothing().returning().get();
    if (inserted) {
      this.scheduleCare();
      return { ok: true, row: inserted };
    }
    // A concurrent retry of the same message landed during the await: answer that one, charged once.
    this.charge(day, -1, -bytes);
    return this.sameMessage(input) ?? { ok: false, status: 409, message: "the message could not be recorded" };
  }

  /**
   * The id a chat gets in both feeds: above the newest of each (Lamport
   * style). The peer stores it first (idempotently), then this object. If
   * this feed moved past that id during the await, the peer is asked again
   * with a higher floor and moves its row up, so neither feed ever shows a
   * new row below an id a reader already saw.
   */
  private async sendChat(me: number, row: FeedRow, peer: number): Promise<number> {
    const stub = this.env.PERSON.get(this.env.PERSON.idFromName(personObjectName(peer)));
    let move = false;
    for (let attempt = 0; ; attempt++) {
      const floor = nextId(me, this.lastId());
      const id = await stub.acceptChat(me, { ...row, id: floor }, move);
      if (id > this.lastId()) return id;
      if (attempt >= 5) throw new Error("the chat's id kept losing to newer records");
      // This feed moved past the peer's id during the await: ask the peer to move its copy up.
      move = true;
    }
  }

  /**
   * The receiving side of a chat from `sender`: stores it at the lowest id of
   * the sender's slot above both `row.id - 1` and this feed's newest. When it
   * is already here (a retry), answers its id; only with `move` (the sender's
   * feed got ahead of that id) is it moved up to the new floor.
   */
  acceptChat(sender: number, row: FeedRow, move = false): number {
    const key = this.messageKey(row.sendableType, row.sendableId, row.messageId ?? "");
    const existing = this.db.select({ id: feed.id }).from(feed).where(key).get();
    if (existing && (!move || existing.id >= row.id)) return existing.id;
    const id = nextId(sender, Math.max(row.id - 1, this.lastId()));
    if (existing) {
      this.db.update(feed).set({ id }).where(eq(feed.id, existing.id)).run();
    } else {
      this.db
        .insert(feed)
        .values({ ...row, id, createdAt: new Date(row.createdAt) })
        .run();
      this.scheduleCare();
    }
    return id;
  }

  /** The feed after `afterId`, oldest first, at most `limit` rows. */
  feedAfter(afterId: number, limit: number): FeedRow[] {
    return this.db.select().from(feed).where(gt(feed.id, afterId)).orderBy(asc(feed.id)).limit(limit).all();
  }

  /** The newest id in the feed; 0 when it is empty. */
  lastActivityId(): number {
    return this.lastId();
  }

  /* ---------- trust requests ---------- */

  /**
   * Counts one trust request this person sends against today, or answers how
   * long until they may send again (100 a day, matched or not).
   */
  chargeTrustRequest(): { ok: true } | { ok: false; retryAfter: number } {
    const now = Date.now();
    const day = utcDay(now);
    const sent = this.db.select().from(trustRequestDays).where(eq(trustRequestDays.day, day)).get()?.sent ?? 0;
    if (sent >= MAX_TRUST_REQUESTS_PER_DAY) {
      return { ok: false, retryAfter: secondsToNextDay(now) };
    }
    this.db
      .insert(trustRequestDays)
      .values({ day, sent: 1 })
      .onConflictDoUpdate({ target: trustRequestDays.day, set: { sent: sql`${trustRequestDays.sent} + 1` } })
      .run();
    this.scheduleCare();
    return { ok: true };
  }

  /**
   * `requesterId` asks this person (`me`) for trust: a new pending request,
   * or, while one is pending, its reason and time refreshed.
   */
  receiveTrustRequest(me: number, requesterId: number, reason: string): void {
    const now = new Date();
    const pending = this.db
      .select({ id: trustRequests.id })
      .from(trustRequests)
      .where(and(eq(trustRequests.requesterId, requesterId), eq(trustRequests.status, "pending")))
      .get();
    if (pending) {
      this.db
        .update(trustRequests)
        .set({ contactReason: reason, updatedAt: now })
        .where(eq(trustRequests.id, pending.id))
        .run();
      return;
    }
    const newest = this.db
      .select({ id: trustRequests.id })
      .from(trustRequests)
      .orderBy(desc(trustRequests.id))
      .limit(1)
      .get();
    this.db
      .insert(trustRequests)
      .values({
        id: nextId(me, newest?.id ?? 0),
        requesterId,
        contactReason: reason,
        status: "pending",
        createdAt: now,
        updatedAt: now,
      })
      .run();
    this.scheduleCare();
  }

  /** Pending requests, newest first. */
  pendingTrustRequests(): TrustRequestRow[] {
    return this.db
      .select()
      .from(trustRequests)
      .where(eq(trustRequests.status, "pending"))
      .orderBy(desc(trustRequests.updatedAt), desc(trustRequests.id))
      .all();
  }

  /** Whether `requesterId` ever asked this person (pending or decided). */
  askedBy(requesterId: number): boolean {
    return (
      this.db
        .select({ id: trustRequests.id })
        .from(trustRequests)
        .where(eq(trustRequests.requesterId, requesterId))
        .get() !== undefined
    );
  }

  /** Closes `requesterId`'s pending request with the decision (its time stays when it was asked). */
  closeTrustRequest(requesterId: number, trusted: boolean): void {
    this.db
      .update(trustRequests)
      .set({ status: trusted ? "trusted" : "untrusted", decidedAt: new Date() })
      .where(and(eq(trustRequests.requesterId, requesterId), eq(trustRequests.status, "pending")))
      .run();
  }

  /* ---------- the heartbeat ---------- */

  /** What the heartbeat reads here: the newest activity id, and when someone last asked for trust (ms, or null). */
  heartbeatTimes(): { activity: number; trustRequest: number | null } {
    const asked = this.db
      .select({ at: trustRequests.updatedAt })
      .from(trustRequests)
      .orderBy(desc(trustRequests.updatedAt))
      .limit(1)
      .get();
    return { activity: this.lastId(), trustRequest: asked ? asked.at.getTime() : null };
  }

  /* ---------- blocked calls ---------- */

  /** Appends calls the provider was told not to put through; keeps the newest `KEEP.blockedCalls`. */
  recordBlockedCalls(me: number, calls: BlockedCallRow[]): void {
    let last =
      this.db.select({ id: blockedCalls.id }).from(blockedCalls).orderBy(desc(blockedCalls.id)).limit(1).get()?.id ?? 0;
    for (const call of calls) {
      last = nextId(me, last);
      this.db
        .insert(blockedCalls)
        .values({ ...call, id: last, createdAt: new Date(call.createdAt) })
        .run();
    }
    this.db
      .delete(blockedCalls)
      .where(
        sql`${blockedCalls.id} <= (select id from ${blockedCalls} order by id desc limit 1 offset ${KEEP.blockedCalls})`,
      )
      .run();
    this.scheduleCare();
  }

  /** The newest `limit` blocked calls, newest first. */
  latestBlockedCalls(limit: number) {
    return this.db
      .select()
      .from(blockedCalls)
      .orderBy(desc(blockedCalls.createdAt), desc(blockedCalls.id))
      .limit(limit)
      .all();
  }

  /* ---------- the whole person ---------- */

  /** Development only: wipes the feed and the blocked calls (the other party keeps its copy of a chat). */
  clearHistory(): void {
    this.db.delete(feed).run();
    this.db.delete(blockedCalls).run();
  }

  /**
   * The person's account is gone: everything here goes (rows and alarm). The
   * empty tables are made again at once, so a late call (a blocked call
   * still on its way) finds a working object, not a broken one.
   */
  async erase(): Promise<void> {
    await this.ctx.storage.deleteAlarm();
    await this.ctx.storage.deleteAll();
    await migrate(this.db, migrations);
  }

  /**
   * Rows moved in from D1 (services/person-moves.ts): inserted under their D1
   * ids, which no id made here can equal (ids here are time-based and far
   * larger); a row already here is left as it is, so a repeated chunk changes
   * nothing. Answers how many rows of each kind the object now holds.
   */
  importRows(rows: {
    feed: MovedFeedRow[];
    blockedCalls: (BlockedCallRow & { id: number })[];
    trustRequests?: MovedTrustRequestRow[];
  }) {
    for (const request of rows.trustRequests ?? []) {
      this.db
        .insert(trustRequests)
        .values({
          ...request,
          decidedAt: request.decidedAt === null ? null : new Date(request.decidedAt),
          createdAt: new Date(request.createdAt),
          updatedAt: new Date(request.updatedAt),
        })
        .onConflictDoNothing()
        .run();
    }
    for (const row of rows.feed) {
      this.db
        .insert(feed)
        .values({ ...row, createdAt: new Date(row.createdAt) })
        .onConflictDoNothing()
        .run();
    }
    for (const call of rows.blockedCalls) {
      this.db
        .insert(blockedCalls)
        .values({ ...call, createdAt: new Date(call.createdAt) })
        .onConflictDoNothing()
        .run();
    }
    if (rows.feed.length + rows.blockedCalls.length > 0) this.scheduleCare();
    return this.counts();
  }

  /**
   * How many rows the object holds, per kind, and how many of them came from
   * D1 (their ids are below `MOVED_ID_LIMIT`; ids made here are far above).
   */
  counts() {
    const count = (table: typeof feed | typeof blockedCalls | typeof trustRequests, moved: boolean) =>
      this.db
        .select({ n: sql<number>`count(*)` })
        .from(table)
        .where(moved ? lt(table.id, MOVED_ID_LIMIT) : undefined)
        .get()?.n ?? 0;
    return {
      feed: count(feed, false),
      blockedCalls: count(blockedCalls, false),
      movedFeed: count(feed, true),
      movedBlockedCalls: count(blockedCalls, true),
      movedTrustRequests: count(trustRequests, true),
    };
  }

  /* ---------- retention: the object's own alarm ---------- */

  /**
   * Prunes what is past its time (blocked calls 90 days, activity 365 days,
   * trust requests not asked again for 365 days, budget days before yesterday), at most `PRUNE_CHUNK` rows per table per
   * alarm; while a table had a full chunk the next alarm follows at once,
   * otherwise in a day.
   */
  override async alarm(): Promise<void> {
    const now = Date.now();
    const chunk = (
      table: typeof feed | typeof blockedCalls | typeof trustRequests,
      column: AnySQLiteColumn,
      days: number,
    ) =>
      this.db
        .delete(table)
        .where(sql`rowid in (select rowid from ${table} where ${column} < ${now - days * DAY_MS} limit ${PRUNE_CHUNK})`)
        .returning({ id: table.id })
        .all().length;
    const pruned = [
      chunk(blockedCalls, blockedCalls.createdAt, KEEP.blockedCallDays),
      chunk(feed, feed.createdAt, KEEP.activityDays),
      chunk(trustRequests, trustRequests.updatedAt, KEEP.trustRequestDays),
    ];
    // Daily counters: today's and yesterday's are kept.
    this.db
      .delete(activityDays)
      .where(lt(activityDays.day, utcDay(now) - 1))
      .run();
    this.db
      .delete(trustRequestDays)
      .where(lt(trustRequestDays.day, utcDay(now) - 1))
      .run();
    const more = pruned.some((n) => n >= PRUNE_CHUNK);
    await this.ctx.storage.setAlarm(now + (more ? 1_000 : DAY_MS));
  }

  /* ---------- helpers ---------- */

  private lastId(): number {
    return this.db.select({ id: feed.id }).from(feed).orderBy(desc(feed.id)).limit(1).get()?.id ?? 0;
  }

  private charge(day: number, records: number, textBytes: number) {
    this.db
      .insert(activityDays)
      .values({ day, records: Math.max(records, 0), textBytes: Math.max(textBytes, 0) })
      .onConflictDoUpdate({
        target: activityDays.day,
        set: {
          records: sql`max(${activityDays.records} + ${records}, 0)`,
          textBytes: sql`max(${activityDays.textBytes} + ${textBytes}, 0)`,
        },
      })
      .run();
  }

  private messageKey(sendableType: string, sendableId: number, messageId: string) {
    return and(
      eq(feed.sendableType, sendableType as FeedRow["sendableType"]),
      eq(feed.sendableId, sendableId),
      eq(feed.messageId, messageId),
    );
  }

  /**
   * The sender's earlier record with this `message_id`, when it is the same
   * activity (a retry); a different activity under the id is a 409; none, null.
   */
  private sameMessage(input: ActivityInput): RecordResult | null {
    if (!input.message_id) return null;
    const first = this.db
      .select()
      .from(feed)
      .where(this.messageKey(input.sendable_type, input.sendable_id, input.message_id))
      .get();
    if (!first) return null;
    const same =
      first.type === input.type &&
      first.receivableType === input.receivable_type &&
      first.receivableId === input.receivable_id;
    return same
      ? { ok: true, row: first }
      : {
          ok: false,
          status: 409,
          message: `\`message_id\` ${input.message_id} is already used by another of your activities`,
        };
  }

  /** Makes sure a retention alarm is set (the first write sets it; each alarm sets the next). */
  private scheduleCare() {
    void this.ctx.storage.getAlarm().then((at) => {
      if (at === null) return this.ctx.storage.setAlarm(Date.now() + DAY_MS);
    });
  }
}
