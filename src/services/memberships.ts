import { and, eq, sql } from "drizzle-orm";
import { guardStatement } from "../db/guard";
import { memberships, people, personEmails, secureNumbers } from "../db/schema";
import { ApiError, conflict } from "../lib/errors";
import { logInfo } from "../lib/log";
import { WriteBatch } from "./outbox";
import { membershipGrants, WRITE_SETTINGS } from "./employees/authorization";
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

/** Whether the membership aliased `m` (or `o`) has a role of its company that grants `write settings`. */
const holdsSettings = (alias: "m" | "o") =>
  membershipGrants(sql`${sql.identifier(alias)}.id`, sql`${sql.identifier(alias)}.company_id`, WRITE_SETTINGS);

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
export async function purgeExpiredEphemeral(
  deps: Deps,
  now: Date,
  chunk = PURGE_CHUNK,
  again = false,
): Promise<{ removed: { companyId: number; personId: number }[]; more: boolean }> {
  const t = now.getTime();
  // A member holding `write settings` whom no member staying beyond this purge also holds it stays
  // past their time: removing them would leave the company with nobody to manage it (as DELETE refuses).
  const due = await deps.db.all<{ companyId: number; personId: number }>(sql`
    select company_id as companyId, person_id as personId from (
      select m.company_id, m.person_id,
             row_number() over (partition by m.company_id order by m.ephemeral_until, m.person_id) as round
      from ${memberships} m where m.ephemeral_until <= ${t}
        and not (${holdsSettings("m")} and not exists (
          select 1 from ${memberships} o where o.company_id = m.company_id
            and (o.ephemeral_until is null or o.ephemeral_until > ${t}) and ${holdsSettings("o")})))
    order by round, company_id
    limit ${chunk}`);
  if (due.length > 0) {
    const batch = new WriteBatch(deps, now);
    // Asked again in the batch: a holder demoted since the read above is no longer the one who stays.
    batch.add(
      guardStatement(
        deps.db,
        "settingsWriter",
        sql`exists (select 1 from json_each(${JSON.stringify(due)}) d
          where exists (select 1 from ${memberships} m where m.company_id = json_extract(d.value, '$.companyId')
                          and m.person_id = json_extract(d.value, '$.personId') and ${holdsSettings("m")})
            and not exists (select 1 from ${memberships} o where o.company_id = json_extract(d.value, '$.companyId')
                          and (o.ephemeral_until is null or o.ephemeral_until > ${t}) and ${holdsSettings("o")}))`,
        async () => {
          throw conflict("a company's last holder of `write settings` changed during the purge; the next run decides");
        },
      ),
    );
    for (const { companyId, personId } of due) addRemoval(batch, companyId, personId);
    try {
      await batch.commit();
    } catch (err) {
      // One company's holder changed since the read: the chunk is read again once (it leaves that holder
      // out now), so the other companies' expired members do not wait for the next hour.
      if (again || !(err instanceof ApiError) || err.statusCode !== 409) throw err;
      return purgeExpiredEphemeral(deps, now, chunk, true);
    }
  }
  const more = due.length === chunk;
  logInfo({ job: "purge", removed: due.length, more });
  return { removed: due, more };
}
