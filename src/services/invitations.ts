import { and, asc, eq, isNull, sql } from "drizzle-orm";
import { companies, invitationOutcomes, invitations, memberships, people } from "../db/schema";
import { logError } from "../lib/log";
import type { Deps } from "./deps";
import { NotSent } from "./messaging";
import { accountOpenedBy } from "./sign-in";

/*
 * Login invitations (docs/decisions.md, "invite"): an employee created with `invite: true` gets one
 * email at their primary address, naming the company and telling them to sign in to the app with
 * that address (a code is sent to it then; nothing in the email signs anyone in). The command writes
 * the row in its batch and asks the `background` queue to send; the hourly cron sends what a lost
 * message left. Each row is finished once: `sent`, `refused` (the email service refused the
 * address), `expired` (not sent within its 7 days), `not-theirs` (the address no longer opens the
 * person's account: it would invite them to nothing) or `left` (no longer a member).
 */

/**
 * After a command wrote invitations: the `background` queue sends them. A message that cannot be sent
 * is logged, not answered: the write is done, and the hourly cron sends what is due.
 */
export async function askToSendInvitations(deps: Deps): Promise<void> {
  try {
    await deps.backgroundQueue.send({ kind: "invitations" });
  } catch (err) {
    logError("the invitations' message was not sent; the hourly cron sends them", err);
  }
}

/** Invitations per chunk: a read and a send each, and one write for the chunk. */
export const INVITATIONS_PER_CHUNK = 25;

type Outcome = (typeof invitationOutcomes)[number];

/**
 * Sends the oldest due invitations, at most `limit`. Stops early, leaving the rest due, when the
 * email service is unavailable (not configured, or not answering): the hourly cron tries again.
 */
export async function sendDueInvitations(deps: Deps, now: Date, limit = INVITATIONS_PER_CHUNK) {
  const due = await deps.db
    .select({
      id: invitations.id,
      personId: invitations.personId,
      email: invitations.email,
      expiresAt: invitations.expiresAt,
      company: companies.name,
      firstName: people.firstName,
      member: memberships.id,
    })
    .from(invitations)
    .innerJoin(companies, eq(companies.id, invitations.companyId))
    .innerJoin(people, eq(people.id, invitations.personId))
    .leftJoin(
      memberships,
      and(eq(memberships.companyId, invitations.companyId), eq(memberships.personId, invitations.personId)),
    )
    .where(isNull(invitations.finishedAt))
    .orderBy(asc(invitations.id))
    .limit(limit)
    .all();
  const finished: { id: number; outcome: Outcome }[] = [];
  let unavailable = false;
  for (const invitation of due) {
    const outcome = await send(deps, invitation, now);
    if (outcome === null) {
      unavailable = true;
      break;
    }
    finished.push({ id: invitation.id, outcome });
  }
  if (finished.length > 0) {
    await deps.db.run(
      sql`update ${invitations} set finished_at = ${now.getTime()},
            outcome = (select json_extract(j.value, '$.outcome') from json_each(${JSON.stringify(finished)}) j
                       where json_extract(j.value, '$.id') = ${invitations.id})
          where ${invitations.id} in (select json_extract(value, '$.id') from json_each(${JSON.stringify(finished)}))
            and ${invitations.finishedAt} is null`,
    );
  }
  const counts = Object.fromEntries(
    invitationOutcomes.map((outcome) => [outcome, finished.filter((row) => row.outcome === outcome).length]),
  );
  return { ...counts, more: !unavailable && due.length === limit };
}

type Due = {
  personId: number;
  email: string;
  expiresAt: Date;
  company: string;
  firstName: string;
  member: number | null;
};

/** One invitation's email, or why it is not sent; null when the email service is unavailable. */
async function send(deps: Deps, invitation: Due, now: Date): Promise<Outcome | null> {
  if (invitation.member === null) return "left";
  if (invitation.expiresAt.getTime() <= now.getTime()) return "expired";
  if ((await accountOpenedBy(deps, { email: invitation.email })) !== invitation.personId) return "not-theirs";
  try {
    await deps.codes.send({ channel: "email", to: invitation.email, ...invitationEmail(invitation) });
    return "sent";
  } catch (err) {
    if (!(err instanceof NotSent)) throw err;
    if (err.kind === "refused") return "refused";
    logError("an invitation was not sent; the hourly cron tries again", err);
    return null;
  }
}

/** The email: who invited them, and how to sign in. No link and no token: the app signs in by a code. */
export function invitationEmail({ company, firstName, email }: Pick<Due, "company" | "firstName" | "email">) {
  return {
    subject: `${company} invited you to sign in`,
    body:
      `Hello ${firstName},\n\n` +
      `${company} added you to its privacy protection: it watches people-search sites for your details and ` +
      `has them removed, and lets calls from its verified numbers reach you.\n\n` +
      `To see what was found and to manage your calls, open the app and sign in with this email address ` +
      `(${email}). The app sends a code to this address; there is no password to choose.\n\n` +
      `If you do not work at ${company}, you can ignore this email.`,
  };
}
