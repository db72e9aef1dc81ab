import { eq, sql } from "drizzle-orm";
import type { Db } from "../db/client";
import { inList } from "../db/sql";
import type { Deps } from "./deps";
import { people, personEmails } from "../db/schema";
import { trustRequestView, type RequesterNames } from "../domain/activity";
import { ownerOfNumber } from "./people";
import type { RequestCursor } from "../objects/person/api";
import { accepted } from "./person-objects";
import { personNamedInIndex } from "./trust-index/contacts";

/** Who a trust request is addressed to: exactly one of these (docs/decisions.md). */
export type TrustRequestTarget = { user_id?: number; phone?: string; email?: string };

export { MAX_TRUST_REQUESTS_PER_DAY } from "../objects/person/limits";

/**
 * Asks the person `target` names for trust (docs/decisions.md, "Trust
 * requests"): one person at most. By phone, the person whose secure number
 * or proven phone it is, nobody else; a request that reaches nobody answers
 * as any other, so the requester never learns whether anyone matched. Every other request counts
 * toward the requester's day (100, counted in their own object, where their
 * requests run one at a time); a request past it is a 429 and reaches no one.
 * The charge and the request are one transaction in the requester's object,
 * which delivers it (its alarm retries a delivery that failed). The match
 * receives it in their own object: asking again while a request is pending
 * refreshes its reason and time (one pending request per pair); asking
 * oneself does nothing.
 */
export async function askForTrust(deps: Deps, requesterId: number, target: TrustRequestTarget, reason: string) {
  // The index names the target without D1 (a person it knows); D1 decides what it does not name.
  const match = (await personNamedInIndex(deps, target)) ?? (await matchPerson(deps, target));
  // The charge and the request are one transaction in the requester's object, which delivers it with
  // the requester's names (its alarm retries a delivery that failed, docs/architecture.md "What crosses people").
  const targets = match !== null && match !== requesterId ? [match] : [];
  accepted(await deps.objects.write(requesterId, (person) => person.sendTrustRequest(targets, reason)));
}

/**
 * The one person `target` names, or null for nobody. A phone reaches the
 * holder of that secure number or the person who proved the number, never
 * someone who only holds it (docs/security.md, "Who a phone reaches"): one
 * read that stops at its first row, the same cost whoever holds the number.
 */
async function matchPerson(deps: Deps, target: TrustRequestTarget): Promise<number | null> {
  const { db } = deps;
  if (target.user_id !== undefined) {
    const row = await db.select({ id: people.id }).from(people).where(eq(people.id, target.user_id)).get();
    return row?.id ?? null;
  }
  if (target.phone !== undefined) {
    const [owner] = await ownerOfNumber(db, target.phone);
    return owner?.id ?? null;
  }
  if (target.email !== undefined) {
    const row = await db
      .select({ id: personEmails.personId })
      .from(personEmails)
      .where(eq(personEmails.email, target.email))
      .get();
    return row?.id ?? null;
  }
  return null;
}

/** Where a page of `GET /contacts/requests` starts: `<updated_at ms>_<id>` of the last request of the page before. */
export const REQUEST_CURSOR = /^\d{1,16}_\d{1,17}$/;

const cursorOf = (cursor: RequestCursor) => `${cursor.at}_${cursor.id}`;
function parseCursor(cursor: string): RequestCursor {
  const [at, id] = cursor.split("_").map(Number);
  return { at: at!, id: id! };
}

/**
 * One page of the pending requests addressed to `personId`, newest first
 * (OpenAPI component `TrustRequest`; docs/decisions.md,
 * "Paging of trust requests"): from their object, with the requesters' names
 * each request brought (docs/architecture.md, "Names travel with facts").
 * Requests that came without names (moved from D1) read them from D1 in one
 * read of those ids; a requester D1 does not know is left out. `next`: the
 * cursor of the following page.
 */
export async function pendingRequests(
  deps: Deps,
  personId: number,
  { cursor, limit }: { cursor?: string | undefined; limit: number },
) {
  const page = await deps.objects
    .of(personId)
    .pendingTrustRequests({ cursor: cursor === undefined ? null : parseCursor(cursor), limit });
  const next = page.next ? cursorOf(page.next) : null;
  if (page.rows.length === 0) return { items: [], next };
  const unnamed = [...new Set(page.rows.filter((r) => r.requester === null).map((r) => r.requesterId))];
  const names = unnamed.length === 0 ? [] : await namesOf(deps.db, unnamed);
  const byId = new Map(names.map((row) => [row.id, row]));
  const items = page.rows.flatMap((request) => {
    const person = request.requester
      ? { id: request.requesterId, ...request.requester }
      : byId.get(request.requesterId);
    return person ? [trustRequestView(person, request)] : [];
  });
  return { items, next };
}

/** The names of these people (those that exist). */
const namesOf = (db: Db, ids: number[]) =>
  db.all<RequesterNames>(sql`select id, first_name, middle_name, last_name from people where ${inList(sql`id`, ids)}`);

/**
 * Records `personId`'s decision about `requesterId` in their object, which
 * closes the pending request in the same transaction, rewrites their
 * receiver record and sends the decision's mirror to the requester's object
 * (docs/architecture.md, "What crosses people"). A requester is someone who
 * asked `personId` for trust (pending or decided before) or about whom
 * `personId` already decided, so a decision can be changed later; anyone
 * else is a 404.
 */
export async function decideTrust(deps: Deps, personId: number, requesterId: number, trusted: boolean) {
  accepted(await deps.objects.write(personId, (person) => person.decideTrust(requesterId, trusted)));
}
