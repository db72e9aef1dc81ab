import { and, eq, lte, sql } from "drizzle-orm";
import type { Db } from "../db/client";
import { memberships, people, personEmails } from "../db/schema";

/**
 * The statements that remove a person from a company [seed 4.3 rule 6]: the
 * company's employer emails and the membership go; the account itself goes
 * only when nothing else holds it (no email left, no other company). The last
 * statement decides in SQL, so running them as one batch is atomic and safe
 * against a concurrent change.
 */
export function removalStatements(db: Db, companyId: number, personId: number) {
  return [
    db
      .delete(personEmails)
      .where(and(eq(personEmails.personId, personId), eq(personEmails.employerCompanyId, companyId))),
    db.delete(memberships).where(and(eq(memberships.companyId, companyId), eq(memberships.personId, personId))),
    db
      .delete(people)
      .where(
        and(
          eq(people.id, personId),
          sql`not exists (select 1 from ${personEmails} where ${personEmails.personId} = ${personId})`,
          sql`not exists (select 1 from ${memberships} where ${memberships.personId} = ${personId})`,
        ),
      ),
  ] as const;
}

/**
 * Ephemeral employees are removed 24 h after creation (seed §3, DECISIONS §5).
 * Returns the removed (company, person) pairs.
 */
export async function purgeExpiredEphemeral(db: Db, now: Date, limit = 200) {
  const expired = await db
    .select({ companyId: memberships.companyId, personId: memberships.personId })
    .from(memberships)
    .where(lte(memberships.ephemeralUntil, now))
    .limit(limit)
    .all();
  for (const { companyId, personId } of expired) {
    await db.batch(removalStatements(db, companyId, personId));
  }
  return expired;
}
