import { DurableObject } from "cloudflare:workers";
import { and, asc, desc, eq, gt, lt, sql, type SQL } from "drizzle-orm";
import { drizzle, type DrizzleSqliteDODatabase } from "drizzle-orm/durable-sqlite";
import type { AnySQLiteColumn } from "drizzle-orm/sqlite-core";
import { migrate } from "drizzle-orm/durable-sqlite/migrator";
import migrations from "../../../drizzle-person/migrations.js";
import type { ActivityInput } from "../../domain/activity";
import { nextId } from "./ids";
import { ACTIVITY_BUDGET, DAY_MS, KEEP, secondsToNextDay, STRANGERS_BUDGET, utcDay } from "./limits";
import { isAcquainted, type Sender } from "./senders";
import { personStub } from "./name";
import {
  activityDays,
  blockedCalls,
  companyTrust,
  contacts,
  contactTombstones,
  erasure,
  feed,
  mirrorOutbox,
  personTrust,
  receivedDays,
  settings,
  trustedBy,
  trustRequestDays,
  trustRequests,
} from "./schema";
import * as book from "./contacts";
import type { ContactInput, MovedContact, Refusal, StoredContact } from "./contacts";
import * as keys from "./index-keys";
import * as idempotency from "./idempotency";
import type { IdempotencyClaim, KeptAnswer } from "../../domain/idempotency";
import * as requests from "./requests";
import type { RequestCursor, TrustRequestRow } from "./requests";
import type { Facts } from "./index-keys";
import { contactBucketKey, NOBODY, receiverKey, type ReceiverRecord } from "../../domain/trust-records";
import type { BlockReason, CallPolicy } from "../../domain/caller-verification";
import { logError } from "../../lib/log";
import { createDb } from "../../db/client";
import { inList } from "../../db/sql";
import { factsOf } from "../../db/facts";
import { TOKEN_RECHECK_MS, type ChatParties, type Requester } from "../../domain/stream";
import { Stream, type Backlog, type ConnectParams } from "./stream";

/*
 * One file past 400 lines on purpose: a Durable Object class is one service
 * of its own, and its RPC methods share the object's state and helpers.
 *
 * One person's own data, in their own Durable Object with SQLite storage
 * (docs/architecture.md, "Where data lives"): their contacts, their trust
 * decisions and settings (and the mirror of others' decisions about them),
 * their activity feed, the calls blocked for them, the trust requests they
 * received, their daily budgets, and the trust-lookup keys of their number. The Worker reaches it by
 * RPC through `deps.persons` (services/persons.ts); requests for one person
 * run one at a time here, so checks and writes need no guard. Every method
 * says what it changes; none awaits between its reads and its writes, except
 * sendChat, which says how it stays correct across its one await.
 */

export type FeedRow = typeof feed.$inferSelect;
export type BlockedCallRow = {
  callerId: string | null;
  countryCode: string;
  phoneNumber: string;
  /** Why verification blocked it; null or absent: the caller is not trusted. */
  reason?: BlockReason | null;
  createdAt: number;
};
/** A trust request moved in from D1: its D1 id, its times in milliseconds. */
export type MovedTrustRequestRow = Omit<TrustRequestRow, "decidedAt" | "createdAt" | "updatedAt"> & {
  decidedAt: number | null;
  createdAt: number;
  updatedAt: number;
};
/** A row moved in from D1: its D1 id, its time in milliseconds. */
export type MovedFeedRow = Omit<FeedRow, "createdAt"> & { createdAt: number };

export type { TrustRequestRow } from "./requests";

/**
 * Contacts as a read answers them, with the people who trusted this person
 * (`trustedMe`). `trustedMeOf`: whom `trustedMe` answers for when it is not
 * everyone (past `MIRROR_INLINE` people, or a list asked about); the reader
 * asks `trustedMe(ids)` about anyone else it needs (services/contacts.ts).
 */
export type ContactRead = { items: StoredContact[]; total: number; trustedMe: number[]; trustedMeOf?: number[] };

/**
 * At most this many people who trusted the person travel with a read of
 * their contacts (and are bound into its D1 read as one JSON value): what a
 * read binds never grows with how many people chose to trust them.
 */
export const MIRROR_INLINE = 1_000;

/** One chunk of a person's rows moved in from D1 (services/person-moves.ts): D1 ids, times in ms. */
export type MovedRows = {
  feed?: MovedFeedRow[];
  blockedCalls?: (BlockedCallRow & { id: number })[];
  trustRequests?: MovedTrustRequestRow[];
  contacts?: MovedContact[];
  tombstones?: { contactId: number; deletedAt: number }[];
  decisions?: { personId: number; trusted: boolean; updatedAt: number }[];
  companySettings?: { companyId: number; trust: "trusted" | "negative"; updatedAt: number }[];
  mirror?: { personId: number; trusted: boolean; decidedAt: number }[];
};

/** How many rows the object holds, per kind; `moved*`: of them, those that came from D1. */
export type HeldCounts = {
  feed: number;
  blockedCalls: number;
  movedFeed: number;
  movedBlockedCalls: number;
  movedTrustRequests: number;
  movedContacts: number;
  tombstones: number;
  decisions: number;
  companySettings: number;
  mirror: number;
  /** The move of this person finished: the object takes no more imports. */
  finished: boolean;
};
/** Rows one alarm deletes per table before it hands over to the next alarm. */
const PRUNE_CHUNK = 1_000;
/** Ids below this came from D1 (the move); ids this object makes are time-based and far above (ids.ts). */
export const MOVED_ID_LIMIT = 2 ** 40;
/** The object's own key-value storage: set once the one-time move of this person finished. */
const MOVE_FINISHED = "move:finished";

/** A chat the receiving object refused: its daily receiving budget is spent. */
export type ChatRefusal = { refused: string; retryAfter: number };

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
  /** Feed ids reserved by chats on their way to the peer (sendChat); in memory: a restart ends those requests. */
  private readonly reserved = new Set<number>();
  /** The index-key writes, one after another, so a key's writes reach KV in the order of the changes. */
  private flushing: Promise<unknown> = Promise.resolve();
  /** The person's live streams (stream.ts): every write below tells it what landed. */
  private readonly stream: Stream;
  /** When the object was erased (ms), null while its person exists; read from storage on start. */
  private erasedAt: number | null = null;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.db = drizzle(ctx.storage);
    this.stream = new Stream(ctx, env, {
      after: (afterId, limit) => this.feedRows(afterId, limit),
      newest: () => this.lastId(),
      trustedMe: (ids) => this.trustedMe(ids),
    });
    // The object's own tables, migrated before any call reaches it.
    void ctx.blockConcurrencyWhile(async () => {
      await migrate(this.db, migrations);
      this.erasedAt = this.db.select().from(erasure).get()?.erasedAt ?? null;
    });
  }

  /* ---------- activity ---------- */

  /**
   * Records an activity `me` wrote (a call record, or a chat they send),
   * idempotently on (sender, `message_id`). A chat to another person is
   * first accepted by that person's object (`peer`), so both feeds hold it
   * under one id before this answers. Charged to today's budget.
   */
  async record(me: number, input: ActivityInput, peer: number | null, parties?: ChatParties): Promise<RecordResult> {
    // The same message sent again while the first is still on its way to the peer: one answer for both.
    const key = input.message_id ? `${input.sendable_type}:${input.sendable_id}:${input.message_id}` : null;
    const inflight = key ? this.sending.get(key) : undefined;
    if (inflight) return inflight;
    const work = this.recordOnce(me, input, peer, parties);
    if (!key) return work;
    this.sending.set(key, work);
    try {
      return await work;
    } finally {
      this.sending.delete(key);
    }
  }

  private async recordOnce(
    me: number,
    input: ActivityInput,
    peer: number | null,
    parties?: ChatParties,
  ): Promise<RecordResult> {
    // A chat tells the receiver this person's companies (their budget for strangers): known before the change.
    if (peer !== null && peer !== me) await this.knowFacts(me);
    const earlier = this.sameMessage(input);
    if (earlier) return earlier;
    const now = Date.now();
    const day = utcDay(now);
    const bytes = utf8Bytes(input.message);
    if (!this.fitsToday(activityDays, ACTIVITY_BUDGET, day, bytes)) {
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
    this.charge(activityDays, day, 1, bytes);
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
    // Ids this chat reserved in the feed (sendChat): released right after its row is stored, in the same turn.
    const held: number[] = [];
    let inserted: FeedRow | undefined;
    try {
      if (peer === null || peer === me) {
        row.id = nextId(me, this.newestTaken());
      } else {
        const sent = await this.sendChat(me, row, peer, held, parties);
        if (typeof sent !== "number") {
          // The receiver took all it may today: nothing is written on either side.
          this.charge(activityDays, day, -1, -bytes);
          return { ok: false, status: 429, message: sent.refused, retryAfter: sent.retryAfter };
        }
        row.id = sent;
      }
      this.stream.remember(me, row.id, parties);
      inserted = this.db.insert(feed).values(row).onConflictDoNothing().returning().get();
    } catch (err) {
      this.charge(activityDays, day, -1, -bytes);
      throw err;
    } finally {
      for (const id of held) this.reserved.delete(id);
      // What the reservations held back (and this row) reaches the streams now.
      this.stream.pump();
    }
    if (inserted) {
      this.scheduleCare();
      return { ok: true, row: inserted };
    }
    // A concurrent retry of the same message landed during the await: answer that one, charged once.
    this.charge(activityDays, day, -1, -bytes);
    return this.sameMessage(input) ?? { ok: false, status: 409, message: "the message could not be recorded" };
  }

  /**
   * The id a chat gets in both feeds: above the newest of each (Lamport
   * style). This feed first reserves an id above its newest (`reserved`:
   * until the chat is stored, readers of this feed see only the ids below
   * the lowest reservation, and rows made meanwhile go above it); the peer
   * stores the chat at that id or higher (idempotently) and answers it; this
   * feed stores it under the same id. Nothing a reader has seen lies above a
   * reservation, so the id is always safe here whatever arrived during the
   * await. Only if that very id was taken here meanwhile (another row of
   * this person's slot) is the peer asked to move its copy above a new
   * reservation.
   */
  private async sendChat(
    me: number,
    row: FeedRow,
    peer: number,
    held: number[],
    parties?: ChatParties,
  ): Promise<number | ChatRefusal> {
    const stub = this.peer(peer);
    for (let attempt = 0; ; attempt++) {
      const floor = nextId(me, this.newestTaken());
      this.reserved.add(floor);
      held.push(floor);
      const id = await stub.acceptChat(peer, { ...row, id: floor }, attempt > 0, this.asSender(me), parties);
      if (typeof id !== "number") return id;
      const taken = this.db.select({ id: feed.id }).from(feed).where(eq(feed.id, id)).get() !== undefined;
      if (!taken && (held.includes(id) || !this.reserved.has(id))) {
        // Held until the caller stores the row, so no record made in between takes it.
        this.reserved.add(id);
        held.push(id);
        return id;
      }
      if (attempt >= 5) throw new Error("the chat's id kept colliding with this person's newer records");
    }
  }

  /**
   * The receiving side of a chat (this object is person `me`'s): stores it
   * at the lowest id of *this* person's slot above both `row.id - 1` and
   * this feed's newest (stored or reserved). Ids in this slot are made only
   * here, one at a time, so the id is this chat's alone in both feeds (the
   * sender makes ids in its own slot). When it is already here (a retry),
   * answers its id; only with `move` (that id was taken in the sender's feed)
   * is it moved up to the new floor.
   */
  async acceptChat(
    me: number,
    row: FeedRow,
    move = false,
    sender?: Sender,
    parties?: ChatParties,
  ): Promise<number | ChatRefusal> {
    // Whether the sender shares a company with this person needs this person's companies (once, before the change).
    if (sender) await this.knowFacts(me);
    const key = this.messageKey(row.sendableType, row.sendableId, row.messageId ?? "");
    const existing = this.db.select({ id: feed.id }).from(feed).where(key).get();
    if (existing && (!move || existing.id >= row.id)) return existing.id;
    // The strangers' budget, per UTC day: people who know this person and their contacts are not counted.
    if (!existing && !(sender && isAcquainted(this.db, sender))) {
      const now = Date.now();
      const day = utcDay(now);
      const bytes = utf8Bytes(row.message);
      if (!this.fitsToday(receivedDays, STRANGERS_BUDGET, day, bytes)) {
        return {
          refused:
            `person ${me} may receive at most ${STRANGERS_BUDGET.records.toLocaleString("en-US")} messages and 10 MiB of ` +
            `message text per day (UTC) from people who do not know them, all together, and has received that much ` +
            `today; retry after midnight UTC (see Retry-After), or ask them for trust`,
          retryAfter: secondsToNextDay(now),
        };
      }
      this.charge(receivedDays, day, 1, bytes);
    }
    const id = nextId(me, Math.max(row.id - 1, this.newestTaken()));
    if (existing) {
      this.db.update(feed).set({ id }).where(eq(feed.id, existing.id)).run();
    } else {
      this.db
        .insert(feed)
        .values({ ...row, id, createdAt: new Date(row.createdAt) })
        .run();
      this.scheduleCare();
    }
    this.stream.recorded(me, id, parties);
    return id;
  }

  /**
   * The feed after `afterId`, oldest first, at most `limit` rows, and which
   * of the people on it trusted this person (they know the reader).
   */
  feedAfter(afterId: number, limit: number): { rows: FeedRow[]; trustedMe: number[] } {
    const rows = this.feedRows(afterId, limit);
    const people = rows.flatMap((row) => [
      ...(row.sendableType === "person" ? [row.sendableId] : []),
      ...(row.receivableType === "person" ? [row.receivableId] : []),
    ]);
    return { rows, trustedMe: people.length === 0 ? [] : this.trustedMe([...new Set(people)]) };
  }

  /** The newest id in the feed; 0 when it is empty. */
  lastActivityId(): number {
    return this.lastId();
  }

  /* ---------- trust requests ---------- */

  /**
   * `me` asks `targets` for trust: the request is counted against today (100
   * a day, matched or not) and queued for each target in one transaction,
   * then delivered; a delivery that fails stays queued and the alarm retries
   * it until it lands (docs/architecture.md, "What crosses people").
   */
  async sendTrustRequest(
    me: number,
    targets: number[],
    reason: string,
    requester?: Requester,
  ): Promise<{ ok: true } | { ok: false; retryAfter: number }> {
    const charged = this.ctx.storage.transactionSync(() =>
      requests.chargeAndQueue(this.db, me, targets, reason, Date.now()),
    );
    if (!charged.ok) return charged;
    this.scheduleCare();
    await this.sendRequests(requester);
    return { ok: true };
  }

  /**
   * `requesterId` asks this person (`me`) for trust (asked at `askedAt`, ms):
   * a new pending request, or, while one is pending, its reason and time
   * refreshed. An erased object takes nothing (the sender's outbox is done).
   */
  receiveTrustRequest(
    me: number,
    requesterId: number,
    reason: string,
    askedAt = Date.now(),
    requester?: Requester,
  ): void {
    if (this.erased) return;
    requests.receive(this.db, me, requesterId, reason, askedAt);
    // The person's live streams hear of it (a delivery the sender's alarm retried carries no names: no event).
    if (requester) this.stream.trustRequest(requester, reason, new Date(askedAt));
    this.scheduleCare();
  }

  /** One page of pending requests, newest first, after `cursor`; `next`: where the next page starts. */
  pendingTrustRequests(page: { cursor: RequestCursor | null; limit: number }) {
    return requests.pendingPage(this.db, page);
  }

  /** Sends the trust requests not yet delivered; a failure waits for the alarm. */
  private async sendRequests(requester?: Requester): Promise<void> {
    const due = requests.queued(this.db);
    if (due.length === 0) return;
    const failed = await Promise.all(
      due.map(async (row) => {
        try {
          await this.peer(row.personId).receiveTrustRequest(
            row.personId,
            row.requesterId,
            row.reason,
            row.askedAt,
            row.requesterId === requester?.id ? requester : undefined,
          );
          requests.delivered(this.db, row);
          return false;
        } catch (err) {
          logError("a trust request did not reach the person asked; the alarm retries it", err, {
            personId: row.personId,
          });
          return true;
        }
      }),
    );
    if (failed.some(Boolean)) await this.retryLater();
  }

  /** Whether this object was erased (its person's account is gone): it then refuses every write. */
  private get erased(): boolean {
    return this.erasedAt !== null;
  }

  /** Remembers, in storage and here, that the object was erased. */
  private markErased(at: number) {
    this.erasedAt = at;
    this.db.insert(erasure).values({ one: 1, erasedAt: at }).onConflictDoNothing().run();
  }

  /** Whether `requesterId` ever asked this person (pending or decided). */
  private askedBy(requesterId: number): boolean {
    return (
      this.db
        .select({ id: trustRequests.id })
        .from(trustRequests)
        .where(eq(trustRequests.requesterId, requesterId))
        .get() !== undefined
    );
  }

  /** Closes `requesterId`'s pending request with the decision (its time stays when it was asked). */
  private closeTrustRequest(requesterId: number, trusted: boolean): void {
    this.db
      .update(trustRequests)
      .set({ status: trusted ? "trusted" : "untrusted", decidedAt: new Date() })
      .where(and(eq(trustRequests.requesterId, requesterId), eq(trustRequests.status, "pending")))
      .run();
  }

  /* ---------- contacts ---------- */

  /**
   * A sync (docs/contacts-sync.md): elements with an `id` update that
   * contact, the others create one; all or nothing, in one transaction. The
   * quota is exact: one request at a time runs here. The index keys of the
   * phones it touched are written before it answers.
   */
  async saveContacts(me: number, inputs: ContactInput[]): Promise<({ ok: true } & ContactRead) | Refusal> {
    await this.knowFacts(me);
    const written = this.ctx.storage.transactionSync(() => {
      const refused =
        book.checkUpdatable(this.db, inputs) ??
        book.checkRoom(this.db, inputs.filter((input) => input.id === undefined).length);
      if (refused) return refused;
      const { ids, touchedPhones } = book.writeContacts(this.db, me, inputs, Date.now());
      keys.markDue(this.db, keys.keysOfPhones(this.db, touchedPhones));
      return { ok: true as const, items: book.readContacts(this.db, ids), total: 0, ...this.mirrorForRead() };
    });
    if (written.ok) {
      this.stream.contactsChanged(Date.now());
      await this.flushIndex();
    }
    return written;
  }

  /** Deletes contacts (`ids`, or every one), each remembered by a tombstone; answers the ids deleted. */
  async deleteContacts(me: number, ids: number[] | "all"): Promise<number[]> {
    await this.knowFacts(me);
    const { deleted } = this.ctx.storage.transactionSync(() => {
      const result = book.deleteContacts(this.db, ids, Date.now());
      keys.markDue(this.db, keys.keysOfPhones(this.db, result.touchedPhones));
      return result;
    });
    if (deleted.length > 0) {
      this.stream.contactsChanged(Date.now());
      this.scheduleCare();
      await this.flushIndex();
    }
    return deleted;
  }

  /*
   * Every read of contacts answers with the people who trusted this person
   * (`trustedMe`): the linking of contacts to people reads it (they know the owner).
   */

  /** Contacts of `ids` (those that are here), in that order. */
  contacts(ids: number[]): ContactRead {
    return { items: book.readContacts(this.db, ids), total: 0, ...this.mirrorForRead() };
  }

  /** One page of contacts, oldest id first, optionally changed since `since` (ms). */
  contactPage(options: { since: number | null; limit: number; offset: number }): ContactRead {
    return { ...book.contactPage(this.db, options), ...this.mirrorForRead() };
  }

  /** The contacts having `e164` among their phones, and who of `among` trusted this person. */
  contactsWithPhone(e164: string, among: number[]): ContactRead {
    return {
      items: book.contactsWithPhone(this.db, e164),
      total: 0,
      trustedMe: this.trustedMe(among),
      trustedMeOf: among,
    };
  }

  /** Who trusted this person, as a read carries it: everyone up to `MIRROR_INLINE`, else nobody (`trustedMeOf: []`). */
  private mirrorForRead(): Pick<ContactRead, "trustedMe" | "trustedMeOf"> {
    const ids = this.db
      .select({ id: trustedBy.personId })
      .from(trustedBy)
      .where(eq(trustedBy.trusted, true))
      .limit(MIRROR_INLINE + 1)
      .all()
      .map((row) => row.id);
    return ids.length > MIRROR_INLINE ? { trustedMe: [], trustedMeOf: [] } : { trustedMe: ids };
  }

  /** One page of deletions at or after `since` (ms), oldest first. */
  deletedContacts(options: { since: number; limit: number; offset: number }) {
    return book.deletedPage(this.db, options);
  }

  /* ---------- trust decisions ---------- */

  /**
   * `me` decides about `other`, who asked them for trust (pending or decided
   * before) or about whom they decided already; anyone else is a 404. The
   * decision, the closed request and the mirror to send are one transaction;
   * the receiver record and the mirror follow (the alarm retries either).
   */
  async decideTrust(me: number, other: number, trusted: boolean): Promise<{ ok: true } | Refusal> {
    await this.knowFacts(me);
    const now = Date.now();
    const decided = this.ctx.storage.transactionSync(() => {
      const known =
        this.askedBy(other) ||
        this.db.select({ id: personTrust.personId }).from(personTrust).where(eq(personTrust.personId, other)).get();
      if (!known) return false;
      this.db
        .insert(personTrust)
        .values({ personId: other, trusted, updatedAt: new Date(now) })
        .onConflictDoUpdate({ target: personTrust.personId, set: { trusted, updatedAt: new Date(now) } })
        .run();
      this.closeTrustRequest(other, trusted);
      this.db
        .insert(mirrorOutbox)
        .values({ personId: other, trusted, decidedAt: now })
        .onConflictDoUpdate({ target: mirrorOutbox.personId, set: { trusted, decidedAt: now } })
        .run();
      keys.markDue(this.db, keys.receiverKeys(this.db));
      return true;
    });
    if (!decided) return { ok: false, status: 404, message: `person ${other} has not asked you for trust` };
    await Promise.all([this.flushIndex(), this.sendMirrors()]);
    return { ok: true };
  }

  /** Whom this person decided about, and how (`trusted`), for these ids; all when `ids` is left out. */
  decisions(ids?: number[]): { personId: number; trusted: boolean }[] {
    return this.db
      .select({ personId: personTrust.personId, trusted: personTrust.trusted })
      .from(personTrust)
      .where(ids ? inList(personTrust.personId, ids) : undefined)
      .all();
  }

  /**
   * The mirror (docs/architecture.md, "What crosses people"): `from` decided
   * about this person at `decidedAt` (ms). An older decision arriving late
   * changes nothing.
   */
  receiveMirror(from: number, trusted: boolean, decidedAt: number): void {
    if (this.erased) return;
    this.db
      .insert(trustedBy)
      .values({ personId: from, trusted, decidedAt })
      .onConflictDoUpdate({
        target: trustedBy.personId,
        set: { trusted, decidedAt },
        setWhere: sql`${trustedBy.decidedAt} <= excluded.decided_at`,
      })
      .run();
  }

  /** The people among `ids` who trusted this person (the mirror); all of them only for tests and the operator. */
  trustedMe(ids?: number[]): number[] {
    return this.db
      .select({ id: trustedBy.personId })
      .from(trustedBy)
      .where(and(eq(trustedBy.trusted, true), ids ? inList(trustedBy.personId, ids) : undefined))
      .all()
      .map((row) => row.id);
  }

  /**
   * Sets (null: removes) this person's trust in a company. `visible`: D1
   * found the company among those they may name (a member, or a verified
   * caller); a company they already have a setting for is visible too.
   * Anything else is the 404 of a company that does not exist.
   */
  async setCompanyTrust(
    me: number,
    companyId: number,
    trust: "trusted" | "negative" | null,
    visible: boolean,
  ): Promise<{ ok: true } | Refusal> {
    await this.knowFacts(me);
    const changed = this.ctx.storage.transactionSync(() => {
      const existing = this.db.select().from(companyTrust).where(eq(companyTrust.companyId, companyId)).get();
      if (!visible && !existing) return null;
      if (existing?.trust === trust) return false;
      if (trust === null) this.db.delete(companyTrust).where(eq(companyTrust.companyId, companyId)).run();
      else
        this.db
          .insert(companyTrust)
          .values({ companyId, trust, updatedAt: new Date() })
          .onConflictDoUpdate({ target: companyTrust.companyId, set: { trust, updatedAt: new Date() } })
          .run();
      keys.markDue(this.db, keys.receiverKeys(this.db));
      return true;
    });
    if (changed === null) return { ok: false, status: 404, message: `company ${companyId} does not exist` };
    if (changed) await this.flushIndex();
    return { ok: true };
  }

  /** This person's company settings (all, or those of `companyIds`). */
  companySettings(companyIds?: number[]): { companyId: number; trust: "trusted" | "negative"; updatedAt: number }[] {
    return this.db
      .select()
      .from(companyTrust)
      .where(companyIds ? inList(companyTrust.companyId, companyIds) : undefined)
      .all()
      .map((row) => ({ ...row, updatedAt: row.updatedAt.getTime() }));
  }

  /* ---------- settings ---------- */

  /** Who may ring this person (`everyone` until they choose). */
  callPolicy(): CallPolicy {
    return this.db.select({ calls: settings.calls }).from(settings).get()?.calls ?? "everyone";
  }

  /**
   * Sets who may ring this person; a change rewrites their receiver record,
   * which carries it to the lookup (docs/decisions.md, "Caller verification").
   */
  async setCallPolicy(me: number, calls: CallPolicy): Promise<CallPolicy> {
    await this.knowFacts(me);
    const changed = this.ctx.storage.transactionSync(() => {
      if (this.callPolicy() === calls) return false;
      const updatedAt = new Date();
      this.db
        .insert(settings)
        .values({ one: 1, calls, updatedAt })
        .onConflictDoUpdate({ target: settings.one, set: { calls, updatedAt } })
        .run();
      keys.markDue(this.db, keys.receiverKeys(this.db));
      return true;
    });
    if (changed) await this.flushIndex();
    return calls;
  }

  /* ---------- the trust-lookup keys ---------- */

  /** D1's facts about this person (their number, their companies) changed: the keys follow. */
  async takeFacts(next: Facts): Promise<void> {
    if (this.erased) return;
    this.ctx.storage.transactionSync(() => keys.takeFacts(this.db, next));
    await this.flushIndex();
  }

  /**
   * The index rebuild (services/index-rebuild.ts): takes D1's facts and
   * writes every key of this person's number, whatever KV is thought to hold.
   */
  async rewriteKeys(next: Facts): Promise<void> {
    this.ctx.storage.transactionSync(() => {
      keys.takeFacts(this.db, next);
      keys.markDue(this.db, keys.everyKey(this.db), true);
    });
    await this.flushIndex();
  }

  /**
   * A lookup missed this person's keys in KV: it read D1's facts and asks
   * here. Answers the receiver record and the bucket (`""`: empty), and
   * writes the keys it `missed` again after the answer (the alarm, at once).
   */
  async receiverRecords(
    next: Facts,
    bucket: number | null,
    missed: string[],
  ): Promise<{ receiver: ReceiverRecord; bucket: string }> {
    if (this.erased) return { receiver: NOBODY, bucket: "" };
    const answer = this.ctx.storage.transactionSync(() => {
      keys.takeFacts(this.db, next);
      // What this object holds now: the facts just pushed, or newer ones it had (a lagging replica's are ignored).
      const current = keys.readFacts(this.db)!;
      if (current.e164 !== next.e164) return { receiver: NOBODY, bucket: "" };
      const receiver = keys.receiverRecord(this.db, current);
      if (next.e164 === null) return { receiver, bucket: "" };
      const bucketKey = bucket === null ? null : contactBucketKey(next.e164, bucket);
      // Only the keys of this number the lookup missed are written again (KV expires each key on its
      // own); a bucket the record does not list stays deleted.
      const own = [receiverKey(next.e164), ...(bucketKey && receiver.nb.includes(bucket!) ? [bucketKey] : [])];
      keys.markDue(
        this.db,
        own.filter((key) => missed.includes(key)),
        true,
      );
      return { receiver, bucket: (bucketKey && keys.valueOf(this.db, next, bucketKey)) ?? "" };
    });
    await this.ctx.storage.setAlarm(Date.now());
    return answer;
  }

  /** The values of this person's keys now, for tests and the operator: key → value. */
  indexValues(): Record<string, string | null> {
    const current = keys.readFacts(this.db);
    return Object.fromEntries(keys.everyKey(this.db).map((key) => [key, keys.valueOf(this.db, current, key)]));
  }

  /* ---------- the heartbeat ---------- */

  /**
   * What the heartbeat reads here (times in ms, or null): the newest activity
   * id, when someone last asked for trust, the newest contact change, the
   * newest company setting, and the companies set to `trusted`.
   */
  heartbeatTimes(): {
    activity: number;
    trustRequest: number | null;
    contact: number | null;
    companySetting: number | null;
    trustedCompanies: number[];
  } {
    const asked = this.db
      .select({ at: trustRequests.updatedAt })
      .from(trustRequests)
      .orderBy(desc(trustRequests.updatedAt))
      .limit(1)
      .get();
    const settings = this.companySettings();
    return {
      activity: this.lastId(),
      trustRequest: asked ? asked.at.getTime() : null,
      contact: book.lastContactUpdate(this.db),
      companySetting: settings.length === 0 ? null : Math.max(...settings.map((row) => row.updatedAt)),
      trustedCompanies: settings.filter((row) => row.trust === "trusted").map((row) => row.companyId),
    };
  }

  /* ---------- blocked calls ---------- */

  /** Appends calls the provider was told not to put through; keeps the newest `KEEP.blockedCalls`. */
  recordBlockedCalls(me: number, calls: BlockedCallRow[]): void {
    if (this.erased) return;
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
    this.stream.blockedCalls(me, calls);
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
   * The person's account is gone: the object is marked erased first (in
   * storage, before any await), so from then on it refuses every write — a
   * blocked call or a peer's delivery arriving late, a fact push, a key
   * rewrite; then a key write already under way lands, their index keys are
   * deleted from KV, and everything here goes (rows and alarm). The empty
   * tables are made again at once, with the mark, so a late call finds a
   * working object that takes nothing. A failure (KV) throws, the mark and
   * the rows stay, and the sweep erases again.
   */
  async erase(): Promise<void> {
    const at = this.erasedAt ?? Date.now();
    this.markErased(at);
    // Their live streams close (stream.ts).
    this.stream.closeAll();
    await this.flushing;
    await keys.deleteAllKeys(this.db, this.env.TRUST_INDEX);
    await this.ctx.storage.deleteAlarm();
    await this.ctx.storage.deleteAll();
    await migrate(this.db, migrations);
    this.markErased(at);
  }

  /**
   * Rows moved in from D1 (services/person-moves.ts): inserted under their D1
   * ids, which no id made here can equal (ids here are time-based and far
   * larger); a row already here is left as it is, so a repeated chunk changes
   * nothing. Answers how many rows of each kind the object now holds.
   */
  importRows(rows: MovedRows): HeldCounts {
    // Erased, or the move finished for this person: what they changed since is theirs, D1's old rows never come back.
    if (this.erased || this.ctx.storage.kv.get(MOVE_FINISHED) === true) return this.counts();
    this.ctx.storage.transactionSync(() => this.importOwnRows(rows));
    if ((rows.feed?.length ?? 0) + (rows.blockedCalls?.length ?? 0) + (rows.tombstones?.length ?? 0) > 0) {
      this.scheduleCare();
    }
    return this.counts();
  }

  /** The move of this person's D1 rows finished (`moved`): later imports change nothing. */
  finishMove(): void {
    this.ctx.storage.kv.put(MOVE_FINISHED, true);
  }

  private importOwnRows(rows: MovedRows) {
    if (rows.contacts) {
      book.importContacts(this.db, rows.contacts);
      keys.markDue(
        this.db,
        keys.keysOfPhones(
          this.db,
          rows.contacts.flatMap((contact) => contact.phones),
        ),
      );
    }
    for (const tombstone of rows.tombstones ?? []) {
      this.db
        .insert(contactTombstones)
        .values({ contactId: tombstone.contactId, deletedAt: new Date(tombstone.deletedAt) })
        .onConflictDoNothing()
        .run();
    }
    for (const decision of rows.decisions ?? []) {
      this.db
        .insert(personTrust)
        .values({ ...decision, updatedAt: new Date(decision.updatedAt) })
        .onConflictDoNothing()
        .run();
    }
    for (const setting of rows.companySettings ?? []) {
      this.db
        .insert(companyTrust)
        .values({ ...setting, updatedAt: new Date(setting.updatedAt) })
        .onConflictDoNothing()
        .run();
    }
    for (const mirrored of rows.mirror ?? [])
      this.receiveMirror(mirrored.personId, mirrored.trusted, mirrored.decidedAt);
    if ((rows.decisions?.length ?? 0) + (rows.companySettings?.length ?? 0) > 0) {
      keys.markDue(this.db, keys.receiverKeys(this.db));
    }
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
    for (const row of rows.feed ?? []) {
      this.db
        .insert(feed)
        .values({ ...row, createdAt: new Date(row.createdAt) })
        .onConflictDoNothing()
        .run();
    }
    for (const call of rows.blockedCalls ?? []) {
      this.db
        .insert(blockedCalls)
        .values({ ...call, createdAt: new Date(call.createdAt) })
        .onConflictDoNothing()
        .run();
    }
  }

  /**
   * How many rows the object holds, per kind, and how many of them came from
   * D1 (their ids are below `MOVED_ID_LIMIT`; ids made here are far above).
   */
  counts(): HeldCounts {
    const moved = (table: typeof feed | typeof blockedCalls | typeof trustRequests | typeof contacts) =>
      this.rowsIn(table, lt(table.id, MOVED_ID_LIMIT));
    return {
      feed: this.rowsIn(feed),
      blockedCalls: this.rowsIn(blockedCalls),
      movedFeed: moved(feed),
      movedBlockedCalls: moved(blockedCalls),
      movedTrustRequests: moved(trustRequests),
      movedContacts: moved(contacts),
      tombstones: this.rowsIn(contactTombstones),
      decisions: this.rowsIn(personTrust),
      companySettings: this.rowsIn(companyTrust),
      mirror: this.rowsIn(trustedBy),
      finished: this.ctx.storage.kv.get(MOVE_FINISHED) === true,
    };
  }

  /* ---------- Idempotency-Key of this person's writes (idempotency.ts) ---------- */

  /** Claims `key` for a request with `fingerprint` (a row in idempotency_keys), or answers why not. */
  async claimIdempotencyKey(key: string, fingerprint: string): Promise<IdempotencyClaim> {
    const claimed = this.ctx.storage.transactionSync(() => idempotency.claim(this.db, key, fingerprint, Date.now()));
    this.scheduleCare();
    return claimed;
  }

  /** Keeps the claim's first answer, or (`answer` null) deletes the claim. */
  async settleIdempotencyKey(key: string, fingerprint: string, answer: KeptAnswer | null): Promise<void> {
    this.ctx.storage.transactionSync(() => idempotency.settle(this.db, key, fingerprint, answer));
  }

  /* ---------- retention: the object's own alarm ---------- */

  /**
   * Prunes what is past its time (blocked calls 90 days, activity 365 days,
   * trust requests not asked again for 365 days, budget days before yesterday), at most `PRUNE_CHUNK` rows per table per
   * alarm; while a table had a full chunk the next alarm follows at once,
   * otherwise in a day.
   */
  override async alarm(): Promise<void> {
    // First what others wait for: index keys and mirrors not yet delivered.
    await Promise.all([this.flushIndex(), this.sendMirrors(), this.sendRequests()]);
    const now = Date.now();
    const chunk = (
      table: typeof feed | typeof blockedCalls | typeof trustRequests | typeof contactTombstones,
      column: AnySQLiteColumn,
      days: number,
    ) =>
      this.db
        .delete(table)
        .where(sql`rowid in (select rowid from ${table} where ${column} < ${now - days * DAY_MS} limit ${PRUNE_CHUNK})`)
        .returning({ at: column })
        .all().length;
    const pruned = [
      chunk(blockedCalls, blockedCalls.createdAt, KEEP.blockedCallDays),
      chunk(feed, feed.createdAt, KEEP.activityDays),
      chunk(trustRequests, trustRequests.updatedAt, KEEP.trustRequestDays),
      chunk(contactTombstones, contactTombstones.deletedAt, KEEP.tombstoneDays),
      idempotency.prune(this.db, now, PRUNE_CHUNK),
    ];
    // Daily counters: today's and yesterday's are kept.
    for (const counter of [activityDays, receivedDays, trustRequestDays]) {
      this.db
        .delete(counter)
        .where(lt(counter.day, utcDay(now) - 1))
        .run();
    }
    const more = pruned.some((n) => n >= PRUNE_CHUNK);
    await this.ctx.storage.setAlarm(now + (more ? 1_000 : DAY_MS));
    await this.retryLater();
    await this.checkStreams();
  }

  /* ---------- live streams (stream.ts, docs/realtime.md) ---------- */

  /** The one HTTP entry of the object: a stream's upgrade, checked and forwarded by the Worker. */
  override async fetch(request: Request): Promise<Response> {
    const params = JSON.parse(new URL(request.url).searchParams.get("connect") ?? "null") as ConnectParams;
    const response = this.stream.connect(params);
    await this.alarmBy(Date.now() + TOKEN_RECHECK_MS);
    return response;
  }

  override webSocketClose(ws: WebSocket, code: number, reason: string): void {
    this.stream.closed(ws, code, reason);
  }

  /** A resume's records, rendered by the Worker, for the upgrade that follows (stream.ts). */
  stageStream(key: string, backlog: Backlog): void {
    this.stream.stage(key, backlog);
  }

  /** A one-use ticket for a browser's stream, made with token `tokenId`. */
  mintStreamTicket(tokenId: number): string {
    return this.stream.mintTicket(tokenId);
  }

  /** Spends a ticket: the token it was made with, or null (unknown, spent or expired). */
  redeemStreamTicket(secret: string): number | null {
    return this.stream.redeemTicket(secret);
  }

  /** While sockets are open, their tokens are checked again at least every `TOKEN_RECHECK_MS`. */
  private async checkStreams(): Promise<void> {
    await this.stream.checkTokens();
    if (this.stream.open()) await this.alarmBy(Date.now() + TOKEN_RECHECK_MS);
  }

  /**
   * The feed's rows after `afterId` a reader may see now: below the lowest id
   * a chat on its way has reserved (see sendChat), so nothing appears below
   * what was read.
   */
  private feedRows(afterId: number, limit: number): FeedRow[] {
    const barrier = this.reserved.size === 0 ? undefined : lt(feed.id, Math.min(...this.reserved));
    return this.db
      .select()
      .from(feed)
      .where(and(gt(feed.id, afterId), barrier))
      .orderBy(asc(feed.id))
      .limit(limit)
      .all();
  }

  /* ---------- helpers ---------- */

  /**
   * Writes the due index keys, after any write already under way (one at a
   * time, so a key's writes keep the order of the changes); a refused write
   * is retried by the alarm.
   */
  private flushIndex(): Promise<void> {
    if (this.erased) return Promise.resolve();
    const run = this.flushing.then(() => keys.flushKeys(this.db, this.env.TRUST_INDEX));
    this.flushing = run.catch(() => undefined);
    return run.then(
      // Keys refused, or written less than a second ago (db/kv-writes.ts): the alarm writes them when they may go.
      ({ nextAt }) => (nextAt !== null ? this.alarmBy(nextAt) : undefined),
      (err: unknown) => {
        logError("writing the trust index failed; the object's alarm retries it", err);
        return this.retryLater();
      },
    );
  }

  /** Sends the mirrors not yet delivered to the people they are about; a failure waits for the alarm. */
  private async sendMirrors(): Promise<void> {
    const me = keys.readFacts(this.db)?.personId;
    const due = this.db.select().from(mirrorOutbox).all();
    if (me === undefined || due.length === 0) return;
    const failed = await Promise.all(
      due.map(async (row) => {
        try {
          await this.peer(row.personId).receiveMirror(me, row.trusted, row.decidedAt);
          this.db
            .delete(mirrorOutbox)
            .where(and(eq(mirrorOutbox.personId, row.personId), eq(mirrorOutbox.decidedAt, row.decidedAt)))
            .run();
          return false;
        } catch (err) {
          logError("a trust decision's mirror did not reach the other person; the alarm retries it", err, {
            personId: row.personId,
          });
          return true;
        }
      }),
    );
    if (failed.some(Boolean)) await this.retryLater();
  }

  /** Brings the alarm forward while index writes or mirrors are due: 1 s, doubling with the attempts, at most 60 s. */
  private async retryLater(): Promise<void> {
    const { due, attempts } = keys.dueState(this.db);
    if (!due && this.rowsIn(mirrorOutbox) === 0 && requests.queuedCount(this.db) === 0) return;
    await this.alarmBy(Date.now() + keys.retryDelayMs(attempts));
  }

  /** Sets the alarm to `when` unless it is set to go off sooner. */
  private async alarmBy(when: number): Promise<void> {
    const at = await this.ctx.storage.getAlarm();
    if (at === null || at > when) await this.ctx.storage.setAlarm(when);
  }

  /**
   * Before a change that touches the index keys: an object D1 has not told
   * its facts yet (its `prs:` work still queued, or an object older than
   * them) reads them from D1 itself, once, so the change's keys are written
   * now and its mirrors name their sender. Facts pushed meanwhile win.
   */
  private async knowFacts(me: number): Promise<void> {
    if (keys.readFacts(this.db) !== null) return;
    const [read] = await factsOf(createDb(this.env.DB), [me]);
    if (keys.readFacts(this.db) === null) this.ctx.storage.transactionSync(() => keys.takeFacts(this.db, read!));
  }

  /** How many rows a table of the object holds (those `where` selects, if given). */
  private rowsIn(
    table:
      | typeof feed
      | typeof blockedCalls
      | typeof trustRequests
      | typeof contacts
      | typeof contactTombstones
      | typeof personTrust
      | typeof companyTrust
      | typeof trustedBy
      | typeof mirrorOutbox,
    where?: SQL,
  ): number {
    return (
      this.db
        .select({ n: sql<number>`count(*)` })
        .from(table)
        .where(where)
        .get()?.n ?? 0
    );
  }

  private peer(personId: number) {
    return personStub(this.env.PERSON, personId);
  }

  /** This person as a chat's sender, for the receiver's budget (senders.ts). */
  private asSender(me: number): Sender {
    const facts = keys.readFacts(this.db);
    return { personId: me, companies: facts?.companies ?? [], e164: facts?.e164 ?? null };
  }

  private lastId(): number {
    return this.db.select({ id: feed.id }).from(feed).orderBy(desc(feed.id)).limit(1).get()?.id ?? 0;
  }

  /** The newest id stored or reserved: a new record of this feed goes above it. */
  private newestTaken(): number {
    return Math.max(this.lastId(), ...this.reserved);
  }

  /** Whether one more record of `bytes` of text fits today's budget of a daily counter (sent or received). */
  private fitsToday(
    table: typeof activityDays | typeof receivedDays,
    budget: { records: number; textBytes: number },
    day: number,
    bytes: number,
  ): boolean {
    const spent = this.db
      .select({ records: table.records, textBytes: table.textBytes })
      .from(table)
      .where(eq(table.day, day))
      .get();
    return (spent?.records ?? 0) + 1 <= budget.records && (spent?.textBytes ?? 0) + bytes <= budget.textBytes;
  }

  /** Adds to (or, negative, gives back) a day of a daily counter, never below zero. */
  private charge(table: typeof activityDays | typeof receivedDays, day: number, records: number, textBytes: number) {
    this.db
      .insert(table)
      .values({ day, records: Math.max(records, 0), textBytes: Math.max(textBytes, 0) })
      .onConflictDoUpdate({
        target: table.day,
        set: {
          records: sql`max(${table.records} + ${records}, 0)`,
          textBytes: sql`max(${table.textBytes} + ${textBytes}, 0)`,
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

  /** Makes sure a retention alarm is set (the first write sets it; each alarm sets the next, at most a day ahead). */
  private scheduleCare() {
    void this.alarmBy(Date.now() + DAY_MS);
  }
}
