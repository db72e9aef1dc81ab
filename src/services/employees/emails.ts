import { and, eq, inArray, sql, type SQL } from "drizzle-orm";
import type { BatchItem } from "drizzle-orm/batch";
import type { Db } from "../../db/client";
import { personEmails } from "../../db/schema";
import { primaryOf, type EmailInput } from "../../domain/employees";
import { badRequest, conflict } from "../../lib/errors";
import { visibleEmail } from "../people";
import { chunks } from "./statements";
import type { Deps } from "../deps";

/**
 * An employee's emails: unique across all people (docs/decisions.md), some
 * managed by the company, others the person's own, one of them primary.
 */

/**
 * Emails are unique across all people (docs/decisions.md). On PUT the person
 * (`self`) may keep the emails this company sees of them; another employer's
 * address of the same person is taken like anyone else's.
 */
export async function assertEmailsFree(
  { db }: Deps,
  emails: EmailInput[],
  self: { companyId: number; personId: number } | null,
) {
  const addresses = emails.map((entry) => entry.email);
  const taken = await db
    .select({ email: personEmails.email })
    .from(personEmails)
    .where(
      and(
        inArray(personEmails.email, addresses),
        self === null
          ? undefined
          : sql`not (${personEmails.personId} = ${self.personId} and ${visibleEmail(self.companyId)})`,
      ),
    )
    .all();
  if (taken.length > 0)
    throw emailsTaken(
      emails,
      taken.map((row) => row.email),
    );
}

/** The 400 for emails that belong to a person already; it does not say whose or where. */
export function emailsTaken(emails: EmailInput[], taken: string[]) {
  const primary = primaryOf(emails).email;
  const names = [...taken].sort((a, b) => Number(b === primary) - Number(a === primary));
  return badRequest(
    `${names[0] === primary ? "the primary email" : "the email"} ${names.map((email) => `\`${email}\``).join(", ")} already ${
      names.length > 1 ? "belong" : "belongs"
    } to a person`,
  );
}

/**
 * Replaces the emails this company manages and sets the primary flag on the
 * emails it sees (another employer's addresses are never touched). When the
 * person also belongs to another company, the flags of their own emails are
 * theirs too: only this company's emails are rewritten, and naming an own
 * email that is not already primary is a 409. A company's view then shows
 * its own primary first (see `loadPeople`). No statement when the emails are
 * as they are now.
 */
export async function emailReplacement(
  db: Db,
  companyId: number,
  personId: number,
  emails: EmailInput[],
  shared: boolean,
) {
  const visible = await db
    .select({
      id: personEmails.id,
      email: personEmails.email,
      primary: personEmails.primary,
      employer: personEmails.employerCompanyId,
    })
    .from(personEmails)
    .where(and(eq(personEmails.personId, personId), visibleEmail(companyId)))
    .all();
  const primary = primaryOf(emails).email;
  if (shared && visible.some((row) => row.employer === null && row.email === primary && !row.primary)) {
    throw conflict(
      `\`${primary}\` is the person's own email and this person also belongs to another company; only they can make it their primary email, so name one of this company's emails as primary`,
    );
  }
  const wanted = new Set(emails.map((entry) => entry.email));
  const have = new Set(visible.map((row) => row.email));
  const dropped = visible.filter((row) => row.employer === companyId && !wanted.has(row.email)).map((row) => row.id);
  const flagged = visible.filter((row) => (shared ? row.employer === companyId : true));
  // The emails as they are now: nothing to write.
  if (
    dropped.length === 0 &&
    emails.every((entry) => have.has(entry.email)) &&
    flagged.every((row) => row.primary === (row.email === primary))
  )
    return [];
  const statements: BatchItem<"sqlite">[] = [];
  if (dropped.length > 0) statements.push(db.delete(personEmails).where(inArray(personEmails.id, dropped)));
  statements.push(
    ...emailInserts(
      db,
      personId,
      companyId,
      emails.filter((entry) => !have.has(entry.email)),
    ),
  );
  statements.push(
    db
      .update(personEmails)
      .set({ primary: sql`${personEmails.email} = ${primary}` })
      .where(
        and(
          eq(personEmails.personId, personId),
          shared ? eq(personEmails.employerCompanyId, companyId) : visibleEmail(companyId),
        ),
      ),
  );
  return statements;
}

function emailInserts(db: Db, personId: number | SQL, companyId: number, emails: EmailInput[]) {
  return chunks(emails).map((part) =>
    db
      .insert(personEmails)
      .values(
        part.map((entry) => ({ personId, email: entry.email, primary: entry.primary, employerCompanyId: companyId })),
      ),
  );
}
