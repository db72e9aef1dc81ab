import { sql } from "drizzle-orm";
import { batchableAll, inList } from "../db/sql";
import {
  createdActivity,
  readActivity,
  type ActivityInput,
  type ActivityType,
  type PartyType,
  type PersonParty,
} from "../domain/activity";
import type { ChatParties } from "../domain/stream";
import type { FeedRow } from "../objects/person/api";
import { knowsMember, knowsPerson } from "./acquaintance";
import type { Deps } from "./deps";
import { accepted } from "./person-objects";

/*
 * Activity (docs/decisions.md, "Activity"): each person's feed lives in their
 * own object (objects/person/person.ts); names of the parties come from D1 at
 * answer time, in one batched read per page.
 */

export type { ActivityInput, ActivityType, PartyType } from "../domain/activity";

/**
 * Who records an activity, and whose log a call record is (docs/decisions.md,
 * "Activity"): a message or an outgoing call is recorded by its sender, an
 * incoming call by its receiver.
 */
export const recordedBy = (type: ActivityType): "sendable" | "receivable" =>
  type.startsWith("incoming_") ? "receivable" : "sendable";

/**
 * Stores an activity `me` recorded, in their object: a call record in their
 * feed only; a message also in the other person's feed, under the same id
 * (the sender's object forwards it, idempotently on (sender, `message_id`),
 * so a retried POST answers the first record and creates nothing). The daily
 * budget is checked and charged inside the object: 429 beyond it, nothing
 * written. A message to an id that is no account is kept in the sender's
 * feed only (the answer is the same either way).
 */
export async function recordActivity(deps: Deps, me: number, input: ActivityInput) {
  const other = input.receivable_id;
  const toPerson = input.type.startsWith("chat_") && input.receivable_type === "person" && other !== me;
  const parties = toPerson ? await chatParties(deps, me, other) : undefined;
  const peer = parties?.people.some((p) => p.id === other) ? other : null;
  const { row } = accepted(await deps.objects.write(me, (person) => person.record(input, peer, parties)));
  return createdActivity(row);
}

/**
 * The one D1 read a chat to a person makes: whether the receiver is an
 * account, and, for the live streams of both (docs/realtime.md), both
 * people's names and whether they share a company.
 */
async function chatParties(deps: Deps, me: number, other: number): Promise<ChatParties> {
  const rows = await deps.db.all<PersonParty & { shared: number }>(
    sql`select p.id, p.first_name, p.middle_name, p.last_name,
          exists (select 1 from memberships a join memberships b on b.company_id = a.company_id
                  where a.person_id = ${me} and b.person_id = ${other}) as shared
        from people p where p.id in (${me}, ${other})`,
  );
  return { people: rows.map(({ shared: _, ...person }) => person), shareCompany: rows.some((row) => row.shared === 1) };
}

type CompanyParty = { id: number; name: string | null };

/**
 * The parties of a page of activity, from D1 in one round trip: each
 * person's and company's names, and whether it knows the reader (only then
 * are the names shown, docs/security.md). Absent ids (no such account) read
 * as null.
 */
async function partiesOf(deps: Deps, readerId: number, rows: FeedRow[], trustedReader: number[]) {
  const ids = (type: PartyType) => [
    ...new Set(
      rows.flatMap((r) =>
        [r.sendableType === type ? r.sendableId : [], r.receivableType === type ? r.receivableId : []].flat(),
      ),
    ),
  ];
  const personIds = ids("person");
  const companyIds = ids("company");
  const [persons, companies] = await deps.db.batch([
    batchableAll<PersonParty & { known: number }>(
      deps.db,
      sql`select p.id, p.first_name, p.middle_name, p.last_name, ${knowsPerson(sql`p.id`, readerId, trustedReader)} as known
          from people p where ${inList(sql`p.id`, personIds)}`,
    ),
    batchableAll<CompanyParty & { known: number }>(
      deps.db,
      sql`select c.id, c.name, ${knowsMember(sql`c.id`, readerId)} as known
          from companies c where ${inList(sql`c.id`, companyIds)}`,
    ),
  ]);
  const person = new Map(
    (persons as (PersonParty & { known: number })[]).map(({ known, ...p }) => [
      p.id,
      known ? p : { id: p.id, first_name: null, middle_name: null, last_name: null },
    ]),
  );
  const company = new Map(
    (companies as (CompanyParty & { known: number })[]).map(({ known, ...c }) => [
      c.id,
      known ? c : { id: c.id, name: null },
    ]),
  );
  return (type: PartyType, id: number): PersonParty | CompanyParty | null =>
    (type === "person" ? person.get(id) : company.get(id)) ?? null;
}

/**
 * The activities in `personId`'s feed with an id above `afterId`, oldest
 * first, at most `limit` (docs/decisions.md); parties read as
 * `AppModelsPerson` / `AppModelsCompany`, named only when they know the
 * reader. A party deleted since reads as null.
 */
export async function activitiesAfter(deps: Deps, personId: number, afterId: number, limit: number) {
  const { rows, trustedMe } = await deps.objects.of(personId).feedAfter(afterId, limit);
  if (rows.length === 0) return [];
  const party = await partiesOf(deps, personId, rows, trustedMe);
  return rows.map((row) => readActivity(row, party));
}

/** Development only: wipes the person's feed and blocked calls (docs/decisions.md). */
export async function clearHistory(deps: Deps, personId: number) {
  await deps.objects.write(personId, (person) => person.clearHistory());
}
