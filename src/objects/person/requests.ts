import { and, desc, eq, lt, or, sql } from "drizzle-orm";
import type { DrizzleSqliteDODatabase } from "drizzle-orm/durable-sqlite";
import type { Names, PeerCard } from "../../domain/facts";
import { deliverEach } from "./outboxes";
import type { Answer, RequestCursor, TrustRequestRow } from "./api";
import { requestsSpent } from "./budgets";
import { nextId } from "./ids";
import { learn, namesOf } from "./peers";
import { MAX_TRUST_REQUESTS_PER_DAY, secondsToNextDay, utcDay } from "./limits";
import type { PersonStub } from "./stub";
import { requestOutbox, trustRequestDays, trustRequests } from "./schema";

/*
 * Trust requests in a person's object (docs/architecture.md, "What crosses
 * people"): on the sender's side the day's count and the outbox of requests
 * on their way, on the receiver's side the requests received, paged newest
 * first. Functions over the object's database, run inside its methods.
 */

type Db = DrizzleSqliteDODatabase;

export type OutboxRequest = typeof requestOutbox.$inferSelect;

/**
 * Counts one trust request sent today and queues it for each of `targets`
 * (one outbox row per recipient; asking again replaces the row), or answers
 * how long until the sender may send again (100 a day, matched or not).
 * Run in one transaction, so a charge never stands without its deliveries.
 */
export function chargeAndQueue(
  db: Db,
  requesterId: number,
  targets: number[],
  reason: string,
  now: number,
): { ok: true } | { ok: false; retryAfter: number } {
  const day = utcDay(now);
  const sent = db.select().from(trustRequestDays).where(eq(trustRequestDays.day, day)).get()?.sent ?? 0;
  if (sent >= MAX_TRUST_REQUESTS_PER_DAY) return { ok: false, retryAfter: secondsToNextDay(now) };
  db.insert(trustRequestDays)
    .values({ day, sent: 1 })
    .onConflictDoUpdate({ target: trustRequestDays.day, set: { sent: sql`${trustRequestDays.sent} + 1` } })
    .run();
  for (const personId of new Set(targets)) {
    db.insert(requestOutbox)
      .values({ personId, requesterId, reason, askedAt: now })
      .onConflictDoUpdate({ target: requestOutbox.personId, set: { requesterId, reason, askedAt: now } })
      .run();
  }
  return { ok: true };
}

/** This person (`me`) asks `targets` for trust: charged and queued (one transaction), or the day's refusal. */
export function ask(db: Db, me: number, targets: number[], reason: string, now: number): Answer {
  const charged = chargeAndQueue(db, me, targets, reason, now);
  return charged.ok ? charged : requestsSpent(charged.retryAfter);
}

/** The requests on their way. */
export const queued = (db: Db): OutboxRequest[] => db.select().from(requestOutbox).all();

/** A request landed: its row goes, unless it was asked again meanwhile (then that one is still to send). */
export function delivered(db: Db, row: OutboxRequest) {
  db.delete(requestOutbox)
    .where(and(eq(requestOutbox.personId, row.personId), eq(requestOutbox.askedAt, row.askedAt)))
    .run();
}

/** How many requests are on their way. */
export const queuedCount = (db: Db): number =>
  db
    .select({ n: sql<number>`count(*)` })
    .from(requestOutbox)
    .get()?.n ?? 0;

/**
 * `requesterId` asks this person (`me`) for trust at `askedAt`: a new pending
 * request, or, while one is pending, its reason and time refreshed. A
 * delivery retried after it landed changes nothing (same reason and time).
 * With the asker's `card` (their names), this object keeps it (peers.ts).
 * Answers the request's id when it is new or asked again later (the person's
 * devices are woken: push.ts), null when nothing new arrived.
 */
export function receive(
  db: Db,
  me: number,
  requesterId: number,
  reason: string,
  askedAt: number,
  card?: PeerCard,
): number | null {
  if (card?.id === requesterId) learn(db, card, Date.now()); // the asker's names and companies, as their object told them
  const at = new Date(askedAt);
  const pending = db
    .select({ id: trustRequests.id, updatedAt: trustRequests.updatedAt })
    .from(trustRequests)
    .where(and(eq(trustRequests.requesterId, requesterId), eq(trustRequests.status, "pending")))
    .get();
  if (pending) {
    // A late retry of an older ask does not undo a newer one.
    if (pending.updatedAt.getTime() <= askedAt) {
      db.update(trustRequests)
        .set({ contactReason: reason, updatedAt: at })
        .where(eq(trustRequests.id, pending.id))
        .run();
    }
    return pending.updatedAt.getTime() < askedAt ? pending.id : null;
  }
  const newest = db.select({ id: trustRequests.id }).from(trustRequests).orderBy(desc(trustRequests.id)).limit(1).get();
  const id = nextId(me, newest?.id ?? 0);
  db.insert(trustRequests)
    .values({
      id,
      requesterId,
      contactReason: reason,
      status: "pending",
      createdAt: at,
      updatedAt: at,
    })
    .run();
  return id;
}

/**
 * One page of pending requests, newest first (by when they were last
 * asked, then id), after `cursor`; `next` is where the following page
 * starts, null on the last. Read through the partial index on pending
 * requests, so a page costs the same with 300,000 pending.
 */
export function pendingPage(
  db: Db,
  { cursor, limit }: { cursor: RequestCursor | null; limit: number },
): { rows: (TrustRequestRow & { requester: Names | null })[]; next: RequestCursor | null } {
  const after = cursor
    ? or(
        lt(trustRequests.updatedAt, new Date(cursor.at)),
        and(eq(trustRequests.updatedAt, new Date(cursor.at)), lt(trustRequests.id, cursor.id)),
      )
    : undefined;
  const rows = db
    .select()
    .from(trustRequests)
    .where(and(eq(trustRequests.status, "pending"), after))
    .orderBy(desc(trustRequests.updatedAt), desc(trustRequests.id))
    .limit(limit + 1)
    .all();
  const page = rows.slice(0, limit);
  const last = page.at(-1);
  // The askers' names as their requests (or later chats) brought them (peers.ts); null: never told here.
  const names = namesOf(db, [...new Set(page.map((row) => row.requesterId))]);
  return {
    rows: page.map((row) => ({ ...row, requester: names.get(row.requesterId) ?? null })),
    next: rows.length > limit && last ? { at: last.updatedAt.getTime(), id: last.id } : null,
  };
}

/**
 * `pendingPage` as the person reads it: the askers the object has not heard from for a day are asked
 * first (`hear`, Feed.hearFrom), so a request of a person whose account is gone is left out within a
 * day, and renamed askers show their new names.
 */
export async function freshPendingPage(
  db: Db,
  page: { cursor: RequestCursor | null; limit: number },
  hear: (ids: number[]) => Promise<Set<number>>,
) {
  const { rows, next } = pendingPage(db, page);
  const askers = [...new Set(rows.map((row) => row.requesterId))];
  const gone = await hear(askers);
  // The names as they are now that the askers were heard from.
  const names = namesOf(db, askers);
  const kept = rows.filter((row) => !gone.has(row.requesterId));
  return { rows: kept.map((row) => ({ ...row, requester: names.get(row.requesterId) ?? null })), next };
}

/** Whether `requesterId` ever asked this person (pending or decided). */
export const askedBy = (db: Db, requesterId: number): boolean =>
  db.select({ id: trustRequests.id }).from(trustRequests).where(eq(trustRequests.requesterId, requesterId)).get() !==
  undefined;

/** Closes `requesterId`'s pending request with the decision (its time stays when it was asked). */
export function close(db: Db, requesterId: number, trusted: boolean): void {
  db.update(trustRequests)
    .set({ status: trusted ? "trusted" : "untrusted", decidedAt: new Date() })
    .where(and(eq(trustRequests.requesterId, requesterId), eq(trustRequests.status, "pending")))
    .run();
}

/**
 * Sends the trust requests not yet delivered, each to the object of the
 * person asked, with the requester's `card` (their names, which the request
 * shows, and companies: docs/architecture.md, "Names travel with facts");
 * answers whether one failed (it stays queued for the alarm).
 */
export async function sendQueued(
  db: Db,
  peer: (personId: number) => PersonStub,
  card: PeerCard | null,
): Promise<boolean> {
  const due = queued(db);
  if (due.length === 0) return false;
  return deliverEach(
    due,
    async (row) => {
      await peer(row.personId).receiveTrustRequest(
        row.requesterId,
        row.reason,
        row.askedAt,
        row.requesterId === card?.id ? card : undefined,
      );
      delivered(db, row);
    },
    "a trust request did not reach the person asked; the alarm retries it",
  );
}
