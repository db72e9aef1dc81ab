import { and, eq, lte, sql } from "drizzle-orm";
import type { Db } from "../db/client";
import { memberships, people, personEmails, secureNumbers } from "../db/schema";
import { emitEvent, type DeliveryMessage } from "./events";
import * as trustIndex from "./trust-index";

/**
 * The statements that remove a person from a company [seed 4.3 rule 6]: the
 * company's employer emails and the membership go; the account itself goes
 * only when nothing else holds it (no email left, no other company). The last
 * statements decide in SQL, so running them as one batch is atomic and safe
 * against a concurrent change. A secure number the account held is marked
 * released (see `secureNumbers.releasedAt`).
 */
export function removalStatements(db: Db, companyId: number, personId: number, now = new Date()) {
  const accountGoes = [
    sql`not exists (select 1 from ${personEmails} where ${personEmails.personId} = ${personId})`,
    sql`not exists (select 1 from ${memberships} where ${memberships.personId} = ${personId})`,
  ];
  return [
    db
      .delete(personEmails)
      .where(and(eq(personEmails.personId, personId), eq(personEmails.employerCompanyId, companyId))),
    db.delete(memberships).where(and(eq(memberships.companyId, companyId), eq(memberships.personId, personId))),
    // Before the account goes (which frees the number): mark its number released.
    db
      .update(secureNumbers)
      .set({ releasedAt: now })
      .where(and(eq(secureNumbers.personId, personId), ...accountGoes)),
    db.delete(people).where(and(eq(people.id, personId), ...accountGoes)),
  ] as const;
}

export type RemovalDeps = { db: Db; kv: KVNamespace; queue: Queue<DeliveryMessage> };

/**
 * The one way a person leaves a company, for `DELETE /employees/{id}` and the
 * ephemeral purge alike: the removal batch, then the trust index rewritten for
 * everything that depended on the person (read before, since their trust rows
 * may go with them), then `person:removed` to the company's webhooks.
 */
export async function removeFromCompany({ db, kv, queue }: RemovalDeps, companyId: number, personId: number) {
  const dependents = await trustIndex.dependentsOf(db, personId);
  await db.batch(removalStatements(db, companyId, personId));
  await trustIndex.refresh(db, kv, dependents);
  await emitEvent(db, queue, companyId, "person:removed", { id: personId });
}

/**
 * Ephemeral employees are removed 24 h after creation (seed §3, DECISIONS §5).
 * Returns the removed (company, person) pairs.
 */
export async function purgeExpiredEphemeral(deps: RemovalDeps, now: Date, limit = 200) {
  const expired = await deps.db
    .select({ companyId: memberships.companyId, personId: memberships.personId })
    .from(memberships)
    .where(lte(memberships.ephemeralUntil, now))
    .limit(limit)
    .all();
  for (const { companyId, personId } of expired) await removeFromCompany(deps, companyId, personId);
  return expired;
}
