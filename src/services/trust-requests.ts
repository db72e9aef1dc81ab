import { and, desc, eq, sql } from "drizzle-orm";
import type { Db } from "../db/client";
import { pruneOlderThan, type PruneSpec } from "../db/prune";
import { notFound, tooManyRequests } from "../lib/errors";
import { WriteBatch, type Deps } from "./outbox";
import { people, personEmails, personTrust, trustRequestDays, trustRequests } from "../db/schema";
import { iso } from "../lib/time";
import { holdersOfNumber } from "./people";

/** Who a trust request is addressed to: exactly one of these (docs/decisions.md). */
export type TrustRequestTarget = { user_id?: number; phone?: string; email?: string };

/** Trust requests a person may send per UTC day, matched or not (docs/decisions.md). */
export const MAX_TRUST_REQUESTS_PER_DAY = 100;
const DAY_MS = 24 * 3600 * 1000;

/**
 * Asks the people matching `target` for trust. A person found by phone may be
 * several people; the requester never learns whether anyone matched. Asking
 * again while a request is pending refreshes its reason and time (one pending
 * request per pair); asking oneself does nothing. Every request counts
 * toward the day's quota, whatever it matched.
 */
export async function askForTrust(db: Db, requesterId: number, target: TrustRequestTarget, reason: string) {
  const now = new Date();
  await chargeDailyQuota(db, requesterId, now);
  const targets = (await matchPeople(db, target)).filter((id) => id !== requesterId);
  if (targets.length === 0) return;
  await db
    .insert(trustRequests)
    .values(
      targets.map((targetId) => ({
        requesterId,
        targetId,
        contactReason: reason,
        status: "pending" as const,
        createdAt: now,
        updatedAt: now,
      })),
    )
    .onConflictDoUpdate({
      target: [trustRequests.requesterId, trustRequests.targetId],
      targetWhere: sql`status = 'pending'`,
      set: { contactReason: reason, updatedAt: now },
    });
}

/**
 * Counts one request against the requester's UTC day, or refuses it with 429
 * when 100 were already sent that day. One statement: the upsert increments
 * only below the limit, so concurrent requests can never pass it. A request
 * that fails after this still counts (it was sent).
 */
async function chargeDailyQuota(db: Db, personId: number, now: Date) {
  const day = Math.floor(now.getTime() / DAY_MS);
  const charged = await db
    .insert(trustRequestDays)
    .values({ day, personId, sent: 1 })
    .onConflictDoUpdate({
      target: [trustRequestDays.day, trustRequestDays.personId],
      set: { sent: sql`${trustRequestDays.sent} + 1` },
      setWhere: sql`${trustRequestDays.sent} < ${MAX_TRUST_REQUESTS_PER_DAY}`,
    })
    .returning({ sent: trustRequestDays.sent });
  if (charged.length > 0) return;
  const secondsToNextDay = Math.ceil(((day + 1) * DAY_MS - now.getTime()) / 1000);
  throw tooManyRequests(
    `a person may send at most ${MAX_TRUST_REQUESTS_PER_DAY} trust requests per day (UTC) and you sent ${MAX_TRUST_REQUESTS_PER_DAY} today; retry after midnight UTC (see Retry-After)`,
    secondsToNextDay,
  );
}

/** Drops the quota counts of days before yesterday (the daily cron; bounded like every prune). */
export async function pruneTrustRequestDays(
  db: Db,
  now: Date,
  limits: Pick<PruneSpec, "chunk" | "maxStatements"> = {},
) {
  const today = Math.floor(now.getTime() / DAY_MS);
  return pruneOlderThan(db, { table: trustRequestDays, column: trustRequestDays.day, cutoff: today - 1, ...limits });
}

async function matchPeople(db: Db, target: TrustRequestTarget): Promise<number[]> {
  if (target.user_id !== undefined) {
    const row = await db.select({ id: people.id }).from(people).where(eq(people.id, target.user_id)).get();
    return row ? [row.id] : [];
  }
  if (target.phone !== undefined) {
    const rows = await holdersOfNumber(db, target.phone).all();
    return rows.map((row) => row.id);
  }
  if (target.email !== undefined) {
    const row = await db
      .select({ id: personEmails.personId })
      .from(personEmails)
      .where(eq(personEmails.email, target.email))
      .get();
    return row ? [row.id] : [];
  }
  return [];
}

/** Pending requests addressed to `personId`, newest first [seed 2.8]. */
export async function pendingRequests(db: Db, personId: number) {
  const rows = await db
    .select({
      id: trustRequests.requesterId,
      first_name: people.firstName,
      middle_name: people.middleName,
      last_name: people.lastName,
      contact_reason: trustRequests.contactReason,
      updatedAt: trustRequests.updatedAt,
    })
    .from(trustRequests)
    .innerJoin(people, eq(people.id, trustRequests.requesterId))
    .where(and(eq(trustRequests.targetId, personId), eq(trustRequests.status, "pending")))
    .orderBy(desc(trustRequests.updatedAt), desc(trustRequests.id))
    .all();
  return rows.map(({ updatedAt, ...row }) => ({ ...row, updated_at: iso(updatedAt)! }));
}

/**
 * Records `personId`'s decision about `requesterId` and closes their pending
 * request. A requester is someone who asked `personId` for trust (pending or
 * decided before) or about whom `personId` already decided, so a decision can
 * be changed later. Returns false for anyone else.
 */
export async function decideTrust(deps: Deps, personId: number, requesterId: number, trusted: boolean) {
  const { db } = deps;
  const known = await db
    .select({ id: sql<number>`1` })
    .from(trustRequests)
    .where(and(eq(trustRequests.targetId, personId), eq(trustRequests.requesterId, requesterId)))
    .union(
      db
        .select({ id: sql<number>`1` })
        .from(personTrust)
        .where(and(eq(personTrust.personId, personId), eq(personTrust.trustedPersonId, requesterId))),
    )
    .all();
  if (known.length === 0) throw notFound(`person ${requesterId} has not asked you for trust`);

  const batch = new WriteBatch(deps);
  const { now } = batch;
  batch.add(
    db
      .insert(personTrust)
      .values({ personId, trustedPersonId: requesterId, trusted, updatedAt: now })
      .onConflictDoUpdate({
        target: [personTrust.personId, personTrust.trustedPersonId],
        set: { trusted, updatedAt: now },
      }),
  );
  batch.add(
    db
      .update(trustRequests)
      // updated_at stays the time it was asked: heartbeat's last_trust_request.
      .set({ status: trusted ? "trusted" : "untrusted", decidedAt: now, updatedAt: sql`${trustRequests.updatedAt}` })
      .where(
        and(
          eq(trustRequests.targetId, personId),
          eq(trustRequests.requesterId, requesterId),
          eq(trustRequests.status, "pending"),
        ),
      ),
  );
  // Whom they trust is their own trust input.
  batch.reindexReceiver(personId);
  await batch.commit();
}
