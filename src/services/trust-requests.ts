import { and, desc, eq, sql } from "drizzle-orm";
import type { Db } from "../db/client";
import { notFound } from "../lib/errors";
import { WriteBatch, type Deps } from "./outbox";
import { people, personEmails, personTrust, trustRequests } from "../db/schema";
import { iso } from "../lib/time";
import { holdersOfNumber } from "./people";

/** Who a trust request is addressed to: exactly one of these (DECISIONS §4). */
export type TrustRequestTarget = { user_id?: number; phone?: string; email?: string };

/**
 * Asks the people matching `target` for trust. A person found by phone may be
 * several people; the requester never learns whether anyone matched. Asking
 * again while a request is pending refreshes its reason and time (one pending
 * request per pair); asking oneself does nothing.
 */
export async function askForTrust(db: Db, requesterId: number, target: TrustRequestTarget, reason: string) {
  const targets = (await matchPeople(db, target)).filter((id) => id !== requesterId);
  if (targets.length === 0) return;
  const now = new Date();
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
