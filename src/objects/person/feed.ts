import { and, asc, desc, eq, gt, lt } from "drizzle-orm";
import type { DrizzleSqliteDODatabase } from "drizzle-orm/durable-sqlite";
import { readActivity, type ActivityInput, type Party } from "../../domain/activity";
import type { PeerCard } from "../../domain/facts";
import { wakingChats } from "../../domain/push";
import type { Answer, FeedRow, FeedView, Refusal, Sender } from "./api";
import * as budgets from "./budgets";
import { ACTIVITY_BUDGET, STRANGERS_BUDGET, utcDay } from "./budgets";
import type { WriteGate } from "./gate";
import { GONE } from "./gate";
import { nextId } from "./ids";
import type { Push } from "./push";
import { feed, activityDays, receivedDays } from "./schema";
import type { Self } from "./self";
import * as peers from "./peers";
import type { OwnAccount } from "./profile";
import { isAcquainted } from "./senders";
import type { FeedSource, Stream } from "./stream";

/*
 * The person's activity feed (docs/decisions.md, "Activity"), and the ids a
 * chat reserves in it on its way to the peer. Records are charged to the
 * day's budgets (budgets.ts); every write tells the live streams (stream.ts).
 */

/** What the feed needs of its object. */
export type FeedHost = {
  db: DrizzleSqliteDODatabase;
  self: Self;
  /** The object's write gate (gate.ts): an erased object takes no chat. */
  gate: WriteGate;
  /** The person's live streams (made after the feed, which is their source). */
  stream(): Stream;
  /** Makes sure the retention alarm is set (a row was written). */
  care(): void;
  /** Wakes the person's devices that have no open stream (a chat arrived). */
  push: Push;
};

export type RecordAnswer = Answer<{ row: FeedRow }>;

/** The receiver's answer to a chat: its id in both feeds, and who the receiver is (their names travel back). */
export type Accepted = { id: number; card: PeerCard | null };

/** A chat to an id that is no account (or no longer is): kept in the sender's feed only. */
export const NO_ACCOUNT: Refusal = { ok: false, status: 404, message: "no such person" };

export class Feed implements FeedSource {
  /** Messages being sent right now, by their idempotency key (see `record`). */
  private readonly sending = new Map<string, Promise<RecordAnswer>>();
  /** Feed ids reserved by chats on their way to the peer (sendChat); in memory: a restart ends those requests. */
  private readonly reserved = new Set<number>();
  /**
   * Parties found to be no account, and when (`hearFrom`): a page does not ask their objects again for a
   * day (each would read D1), whatever number of ids a person's records name. In memory, at most 10,000.
   */
  private readonly noAccount = new Map<number, number>();

  constructor(private readonly host: FeedHost) {}

  private get db() {
    return this.host.db;
  }

  /**
   * Records an activity this person wrote (a call record, or a chat they
   * send), idempotently on (sender, `message_id`). A chat to another person
   * is first accepted by that person's object (`peer`), so both feeds hold it
   * under one id before this answers. Charged to today's budget.
   */
  async record(input: ActivityInput, peer: number | null): Promise<RecordAnswer> {
    // The same message sent again while the first is still on its way to the peer: one answer for both.
    const key = input.message_id ? `${input.sendable_type}:${input.sendable_id}:${input.message_id}` : null;
    const inflight = key ? this.sending.get(key) : undefined;
    if (inflight) {
      const first = await inflight;
      // Another activity under the same id is the 409 a later request gets, not the first one's record.
      return this.sameMessage(input) ?? first;
    }
    const work = this.recordOnce(input, peer);
    if (!key) return work;
    this.sending.set(key, work);
    try {
      return await work;
    } finally {
      this.sending.delete(key);
    }
  }

  private async recordOnce(input: ActivityInput, peer: number | null): Promise<RecordAnswer> {
    const me = this.host.self.id;
    // A chat tells the receiver this person's companies (their budget for strangers) and names: known before the change.
    if (peer !== null && peer !== me) await this.host.self.profile();
    const earlier = this.sameMessage(input);
    if (earlier) return earlier;
    const now = Date.now();
    const day = utcDay(now);
    const bytes = budgets.utf8Bytes(input.message);
    if (!budgets.fitsToday(this.db, activityDays, ACTIVITY_BUDGET, day, bytes)) return budgets.activitySpent(now);
    // Charged before the chat's await, so concurrent requests cannot pass the budget together.
    budgets.charge(this.db, activityDays, day, 1, bytes);
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
      const sent = peer === null || peer === me ? NO_ACCOUNT : await this.sendChat(row, peer, held);
      if (sent === NO_ACCOUNT || (!("id" in sent) && sent.status === 404)) {
        // A call record, or a chat to an id that is no account (or no longer is): this feed only.
        if (peer !== null && peer !== me) peers.forget(this.db, peer);
        row.id = nextId(me, this.newestTaken());
      } else if (!("id" in sent)) {
        // The receiver took all it may today: nothing is written on either side.
        budgets.charge(this.db, activityDays, day, -1, -bytes);
        return sent;
      } else {
        row.id = sent.id;
        // The receiver's names came back with the id: this feed and its streams show them (peers.ts).
        if (sent.card) peers.learn(this.db, sent.card, now);
      }
      inserted = this.db.insert(feed).values(row).onConflictDoNothing().returning().get();
    } catch (err) {
      budgets.charge(this.db, activityDays, day, -1, -bytes);
      throw err;
    } finally {
      for (const id of held) this.reserved.delete(id);
      // What the reservations held back (and this row) reaches the streams now.
      this.host.stream().pump();
    }
    if (inserted) {
      this.host.care();
      return { ok: true, row: inserted };
    }
    // A concurrent retry of the same message landed during the await: answer that one, charged once.
    budgets.charge(this.db, activityDays, day, -1, -bytes);
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
   * this person's slot), or is below the reservation (a retry of a chat the
   * peer stored before, under an id this feed's readers may have passed), is
   * the peer asked to move its copy above a new reservation.
   */
  private async sendChat(row: FeedRow, peer: number, held: number[]): Promise<Accepted | Refusal> {
    const me = this.host.self.id;
    const stub = this.host.self.peer(peer);
    for (let attempt = 0; ; attempt++) {
      const floor = nextId(me, this.newestTaken());
      this.reserved.add(floor);
      held.push(floor);
      const answer = await stub.acceptChat({ ...row, id: floor }, attempt > 0, this.host.self.asSender());
      if (!("id" in answer)) return answer;
      const { id } = answer;
      const taken = this.db.select({ id: feed.id }).from(feed).where(eq(feed.id, id)).get() !== undefined;
      // Below the floor: a retry the receiver had stored before, under an id this feed's readers may have
      // passed since; it is moved above a new reservation like a taken id.
      if (!taken && id >= floor && (held.includes(id) || !this.reserved.has(id))) {
        // Held until the caller stores the row, so no record made in between takes it.
        this.reserved.add(id);
        held.push(id);
        return answer;
      }
      if (attempt >= 5) throw new Error("the chat's id kept colliding with this person's newer records");
    }
  }

  /**
   * The receiving side of a chat: stores it at the lowest id of *this*
   * person's slot above both `row.id - 1` and this feed's newest (stored or
   * reserved). Ids in this slot are made only here, one at a time, so the id
   * is this chat's alone in both feeds (the sender makes ids in its own
   * slot). When it is already here (a retry), answers its id; only with
   * `move` (that id was taken in the sender's feed) is it moved up to the new
   * floor. The answer carries this person's names back to the sender
   * (docs/architecture.md, "Names travel with facts"); an id that is no
   * account answers `NO_ACCOUNT` and stores nothing.
   */
  async accept(row: FeedRow, move = false, sender?: Sender): Promise<Accepted | Refusal> {
    // Whether the sender shares a company with this person needs this person's companies, and the answer
    // their names (read from D1 once, before the change, when never told).
    const own = await this.host.self.profile();
    if (own === null) return this.host.self.erased ? GONE : NO_ACCOUNT;
    const stored = this.host.gate.now(GONE, () => this.store(row, move, sender));
    if (typeof stored === "number") return { id: stored, card: this.host.self.card() };
    if ("ok" in stored) return stored;
    if (stored.fresh) {
      this.host.care();
      if (wakingChats.includes(row.type)) this.host.push.wake("chat", stored.id);
    }
    this.host.stream().pump();
    return { id: stored.id, card: this.host.self.card() };
  }

  /** `accept`'s transaction: the id already here (a retry), the budget's refusal, or the id stored (`fresh`: new). */
  private store(row: FeedRow, move: boolean, sender?: Sender): number | Refusal | { id: number; fresh: boolean } {
    const me = this.host.self.id;
    const key = this.messageKey(row.sendableType, row.sendableId, row.messageId ?? "");
    // The sender's names as their object told them, whatever the chat's fate here (peers.ts).
    if (sender?.card) peers.learn(this.db, sender.card, Date.now());
    const existing = this.db.select({ id: feed.id }).from(feed).where(key).get();
    if (existing && (!move || existing.id >= row.id)) return existing.id;
    // The strangers' budget, per UTC day: people who know this person and their contacts are not counted.
    if (!existing && !(sender && isAcquainted(this.db, sender))) {
      const now = Date.now();
      const day = utcDay(now);
      const bytes = budgets.utf8Bytes(row.message);
      if (!budgets.fitsToday(this.db, receivedDays, STRANGERS_BUDGET, day, bytes))
        return budgets.strangersSpent(me, now);
      budgets.charge(this.db, receivedDays, day, 1, bytes);
    }
    const id = nextId(me, Math.max(row.id - 1, this.newestTaken()));
    if (existing) {
      this.db.update(feed).set({ id }).where(eq(feed.id, existing.id)).run();
      return { id, fresh: false };
    }
    this.db
      .insert(feed)
      .values({ ...row, id, createdAt: new Date(row.createdAt) })
      .run();
    return { id, fresh: true };
  }

  /**
   * The feed's rows after `afterId` a reader may see now: below the lowest id
   * a chat on its way has reserved (see sendChat), so nothing appears below
   * what was read.
   */
  after(afterId: number, limit: number): FeedRow[] {
    const barrier = this.reserved.size === 0 ? undefined : lt(feed.id, Math.min(...this.reserved));
    return this.db
      .select()
      .from(feed)
      .where(and(gt(feed.id, afterId), barrier))
      .orderBy(asc(feed.id))
      .limit(limit)
      .all();
  }

  /**
   * The rows after `afterId` as this person reads them (GET /activity's
   * shape): each party named from what this object knows (peers.ts). A
   * person on the page this object never heard of, or heard of over a day
   * ago, is asked for by their own object first (one call each, no D1); one
   * that is no account reads as null.
   */
  async page(afterId: number, limit: number): Promise<FeedView[]> {
    const me = this.host.self.id;
    const rows = this.after(afterId, limit);
    if (rows.length === 0) return [];
    await this.host.self.profile();
    await this.hearFrom(peers.peopleOn(rows));
    const party = peers.partiesFor(this.db, me, rows, "null");
    return rows.map((row) => readActivity(row, party));
  }

  /**
   * Asks the objects of the people among `ids` this object never heard of, or heard of over a day ago,
   * for their card (one RPC each, no D1), and keeps it (peers.ts); answers those that are no account
   * (any more), whom it forgets, and remembers for a day so that later pages do not ask them again. A
   * feed page and a page of trust requests ask before they name anyone; an object that fails to answer
   * fails neither page.
   */
  async hearFrom(ids: number[]): Promise<Set<number>> {
    const now = Date.now();
    const me = this.host.self.id;
    // Those found to be no account within a day are known so already: not asked again.
    const known = new Set<number>();
    const asked: number[] = [];
    for (const id of peers.unheard(
      this.db,
      [...new Set(ids)].filter((id) => id !== me),
      now,
    )) {
      const at = this.noAccount.get(id);
      if (at !== undefined && at > now - peers.PEER_FRESH_MS) known.add(id);
      else asked.push(id);
    }
    if (asked.length === 0) return known;
    const answers = await Promise.allSettled(asked.map((id) => this.host.self.peer(id).ownAccount()));
    // An object that did not answer is asked again next time; what was known of its person stays meanwhile.
    const heard = asked.flatMap((id, i) => {
      const answer = answers[i]!;
      return answer.status === "fulfilled" ? [{ id, card: cardOf(answer.value) }] : [];
    });
    this.host.gate.now(undefined, () =>
      heard.forEach(({ id, card }) => (card ? peers.learn(this.db, card, now) : peers.forget(this.db, id))),
    );
    for (const { id, card } of heard) {
      if (card) this.noAccount.delete(id);
      else {
        if (this.noAccount.size >= 10_000) this.noAccount.delete(this.noAccount.keys().next().value!);
        this.noAccount.set(id, now);
        known.add(id);
      }
    }
    return known;
  }

  /** The newest id in the feed; 0 when it is empty. */
  newest(): number {
    return lastId(this.db);
  }

  /**
   * The newest id a reader may have seen now: below the lowest reservation while a chat is on its
   * way (`after`'s barrier), so a stream opened meanwhile still gets that chat, and what landed above it.
   */
  seen(): number {
    const newest = this.newest();
    return this.reserved.size === 0 ? newest : Math.min(newest, Math.min(...this.reserved) - 1);
  }

  /** How the live streams name the parties of `rows`: from what this object knows, asking nobody (peers.ts). */
  parties(rows: FeedRow[]): (type: "person" | "company", id: number) => Party {
    return peers.partiesFor(this.db, this.host.self.id, rows, "unnamed");
  }

  /** The newest id stored or reserved: a new record of this feed goes above it. */
  private newestTaken(): number {
    return Math.max(this.newest(), ...this.reserved);
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
  private sameMessage(input: ActivityInput): RecordAnswer | null {
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
}

/** What a person's own account tells another object of them: names and companies (peers.ts). */
const cardOf = (account: OwnAccount | null): PeerCard | null =>
  account && {
    id: account.id,
    first_name: account.first_name,
    middle_name: account.middle_name,
    last_name: account.last_name,
    companies: account.companies.map((company) => company.id),
    version: account.version,
  };

/** The newest id in a feed; 0 when it is empty. */
export const lastId = (db: DrizzleSqliteDODatabase): number =>
  db.select({ id: feed.id }).from(feed).orderBy(desc(feed.id)).limit(1).get()?.id ?? 0;

/** Development only: wipes the feed. */
export const clearFeed = (db: DrizzleSqliteDODatabase) => db.delete(feed).run();
