import { and, eq, sql } from "drizzle-orm";
import type { Db } from "../db/client";
import { inList } from "../db/sql";
import { notFound, tooManyRequests } from "../lib/errors";
import { MAX_TRUST_REQUESTS_PER_DAY } from "../objects/person/limits";
import { WriteBatch, type Deps } from "./outbox";
import { people, personEmails, personTrust } from "../db/schema";
import { iso } from "../lib/time";
import { holdersOfNumber } from "./people";

/** Who a trust request is addressed to: exactly one of these (docs/decisions.md). */
export type TrustRequestTarget = { user_id?: number; phone?: string; email?: string };

export { MAX_TRUST_REQUESTS_PER_DAY } from "../objects/person/limits";

/**
 * Asks the people matching `target` for trust. A person found by phone may be
 * several people; the requester never learns whether anyone matched. Every
 * request counts toward the requester's day (100, counted in their own object,
 * where their requests run one at a time); a request past it is a 429 and
 * reaches no one. Each match receives it in their own object: asking again
 * while a request is pending refreshes its reason and time (one pending
 * request per pair); asking oneself does nothing.
 */
export async function askForTrust(deps: Deps, requesterId: number, target: TrustRequestTarget, reason: string) {
  const charged = await deps.persons.of(requesterId).chargeTrustRequest();
  if (!charged.ok) {
    throw tooManyRequests(
      `a person may send at most ${MAX_TRUST_REQUESTS_PER_DAY} trust requests per day (UTC) and you sent ${MAX_TRUST_REQUESTS_PER_DAY} today; retry after midnight UTC (see Retry-After)`,
      charged.retryAfter,
    );
  }
  const targets = (await matchPeople(deps.db, target)).filter((id) => id !== requesterId);
  await Promise.all(targets.map((id) => deps.persons.of(id).receiveTrustRequest(id, requesterId, reason)));
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

/**
 * Pending requests addressed to `personId`, newest first [seed 2.8]: from
 * their object, with the requesters' names from D1 in one read. A requester
 * whose account is gone is left out.
 */
export async function pendingRequests(deps: Deps, personId: number) {
  const requests = await deps.persons.of(personId).pendingTrustRequests();
  if (requests.length === 0) return [];
  const names = await deps.db.all<{ id: number; first_name: string; middle_name: string | null; last_name: string }>(
    sql`select id, first_name, middle_name, last_name from people
        where ${inList(sql`id`, [...new Set(requests.map((r) => r.requesterId))])}`,
  );
  const byId = new Map(names.map((row) => [row.id, row]));
  return requests.flatMap((request) => {
    const person = byId.get(request.requesterId);
    if (!person) return [];
    return [{ ...person, contact_reason: request.contactReason, updated_at: iso(new Date(request.updatedAt))! }];
  });
}

/**
 * Records `personId`'s decision about `requesterId` and closes their pending
 * request. A requester is someone who asked `personId` for trust (pending or
 * decided before) or about whom `personId` already decided, so a decision can
 * be changed later. Returns false for anyone else.
 */
export async function decideTrust(deps: Deps, personId: number, requesterId: number, trusted: boolean) {
  const { db } = deps;
  const object = deps.persons.of(personId);
  const [asked, decided] = await Promise.all([
    object.askedBy(requesterId),
    db
      .select({ id: sql<number>`1` })
      .from(personTrust)
      .where(and(eq(personTrust.personId, personId), eq(personTrust.trustedPersonId, requesterId)))
      .get(),
  ]);
  if (!asked && !decided) throw notFound(`person ${requesterId} has not asked you for trust`);

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
  // Whom they trust is their own trust input.
  batch.reindexReceiver(personId);
  await batch.commit();
  // The request, in their object, is closed after the decision is committed (a failure leaves it pending: deciding again closes it).
  await object.closeTrustRequest(requesterId, trusted);
}
