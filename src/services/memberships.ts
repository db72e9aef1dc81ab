import { and, eq, sql } from "drizzle-orm";
import { memberships, people, personEmails, secureNumbers } from "../db/schema";
import { logInfo } from "../lib/log";
import { WriteBatch } from "./outbox";
import type { Deps } from "./deps";

/**
 * Adds to `batch` the removal of a person from a company (docs/decisions.md, "Data model"):
 * the company's employer emails and the membership go; the account itself
 * goes only when nothing else holds it (no email left, no other company).
 * The statements decide in SQL, so the batch is atomic and safe against a
 * concurrent change. A secure number the account held is marked released
 * (see `secureNumbers.releasedAt`).
 *
 * Consequences in the same batch: the index keys that depend on the person
 * (their receiver record, the numbers they hold; recorded first, while their
 * rows still exist) and `person:removed`, written only if this batch removed
 * the membership — so of two concurrent removals exactly one emits.
 * Returns the position of the membership delete, whose rows say whether it
 * removed anything.
 */
export function addRemoval(batch: WriteBatch, companyId: number, personId: number): number {
  const { db } = batch.deps;
  const accountGoes = [
    sql`not exists (select 1 from ${personEmails} where ${personEmails.personId} = ${personId})`,
    sql`not exists (select 1 from ${memberships} where ${memberships.personId} = ${personId})`,
  ];
  batch.markStalePerson(personId);
  batch.markStaleNumbersOf(personId);
  batch.add(
    db
      .delete(personEmails)
      .where(and(eq(personEmails.personId, personId), eq(personEmails.employerCompanyId, companyId))),
  );
  const removed = batch.add(
    db
      .delete(memberships)
      .where(and(eq(memberships.companyId, companyId), eq(memberships.personId, personId)))
      .returning({ id: memberships.id }),
  );
  batch.emit([{ companyId, event: "person:removed", payload: { id: personId } }], { ifChanged: true });
  // A company whose scan side is in its object forgets the person there (services/company-forgets.ts).
  batch.forgetInCompanyObject(companyId, personId);
  // Before the account goes (which frees the number): mark its number released.
  batch.add(
    db
      .update(secureNumbers)
      .set({ releasedAt: batch.now })
      .where(and(eq(secureNumbers.personId, personId), ...accountGoes)),
  );
  // Their tokens go with the account (cascade): their verification records in KV say so.
  batch.markStaleTokensOf(personId, and(...accountGoes)!);
  batch.add(db.delete(people).where(and(eq(people.id, personId), ...accountGoes)));
  // The account went: so does everything in the person's own object (activity, blocked calls).
  batch.eraseObjectIfDeleted(personId);
  return removed;
}

/** Whether the membership delete at `position` removed a row. */
export const removedBy = (results: unknown[], position: number) => (results[position] as unknown[]).length > 0;

/** Ephemeral employees are removed 24 h after creation (docs/decisions.md). */
export const PURGE_CHUNK = 50;

/**
 * One chunk of the ephemeral purge: at most `chunk` expired memberships,
 * taken round-robin across companies (each company's oldest first, one per
 * company per round), so one tenant's backlog never starves the others.
 * They are removed exactly as DELETE /employees/{id} removes, all in one
 * batch. Returns the removed pairs and whether more may be due (a full
 * chunk): the caller then continues in another invocation.
 *
 * Budget per chunk of 50: ≈ 350 D1 statements in the batch, one index
 * application (≈ 12 D1 statements, one KV put per key), one queue send.
 */
export async function purgeExpiredEphemeral(deps: Deps, now: Date, chunk = PURGE_CHUNK) {
  const due = await deps.db.all<{ companyId: number; personId: number }>(sql`
    select company_id as companyId, person_id as personId from (
      select company_id, person_id,
             row_number() over (partition by company_id order by ephemeral_until, person_id) as round
      from ${memberships} where ephemeral_until <= ${now.getTime()})
    order by round, company_id
    limit ${chunk}`);
  if (due.length > 0) {
    const batch = new WriteBatch(deps, now);
    for (const { companyId, personId } of due) addRemoval(batch, companyId, personId);
    await batch.commit();
  }
  const more = due.length === chunk;
  logInfo({ job: "purge", removed: due.length, more });
  return { removed: due, more };
}
