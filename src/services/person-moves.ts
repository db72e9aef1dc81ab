import { and, asc, count, eq, gt, inArray, sql } from "drizzle-orm";
import {
  companyTrust,
  contactAddresses,
  contactEmails,
  contactPhones,
  contacts,
  contactTombstones,
  personMoves,
  personTrust,
} from "../db/schema";
import { KEEP } from "../objects/person/limits";
import {
  MARKED,
  type MarkedKind,
  type MovedContact,
  type MovedFeedRow,
  type MovedRows,
  type MovedTrustRequestRow,
} from "../objects/person/api";
import type { BackgroundMessage } from "../domain/queue-messages";
import type { Deps } from "./deps";
import { KEY_KINDS } from "../domain/key-kinds";
import { makeCurrent } from "./trust-index/current";
import { markStalePerson } from "./trust-index/stale";
import { DAY_MS } from "../lib/time";

/*
 * The one-time move of each person's own rows (activity, blocked calls, the
 * trust requests they received, their contacts and the tombstones of those
 * they deleted, their trust decisions about people and companies, and the
 * decisions others made about them) from D1 into their object
 * (docs/architecture.md, "The one-time move from D1"). A deployment that kept
 * them in D1 runs it once (`npm run admin -- move-person-data`):
 * - `move-people` walks the people table, 100 ids per message, records each
 *   person as `pending` and sends one `move-person` message per person;
 * - `move-person` copies one chunk of one kind of that person's rows into
 *   their object (inserted under their D1 ids or keys; a repeated chunk
 *   changes nothing), continues while the chunk was full, and at the end
 *   compares how many of their D1 rows the object holds: `moved` (and their
 *   object is told D1's facts about them, so it writes its trust-lookup keys),
 *   or `mismatch` for the operator to look at (a rerun repeats only the
 *   comparison's work).
 * Each message is one D1 read or batch of reads (the final comparison: one
 * read, one write and the index work of one person), one object call and at
 * most one queue send: far inside one invocation's limits. The D1 tables stay
 * until a later migration drops them, once every person is `moved`.
 */

/** People per `move-people` message; rows per `move-person` chunk (contacts: with their values). */
export const MOVE_PEOPLE_CHUNK = 100;
export const MOVE_ROWS_CHUNK = 500;

type BlockedSource = {
  id: number;
  callerId: string | null;
  countryCode: string;
  phoneNumber: string;
  createdAt: number;
};

/** One chunk of one kind: what goes to the object, how many rows D1 gave, whether it was full, the next `after`. */
type StageChunk = { moved: MovedRows; rows: number; full: boolean; last: number };

/** The activities person `p` sees (the rule the feed had in D1): messages either way, call records they wrote. */
const visibleTo = (p: number) => sql`(
  (type like 'chat_%' and ((sendable_type = 'person' and sendable_id = ${p}) or (receivable_type = 'person' and receivable_id = ${p})))
  or (type like 'outgoing_%' and sendable_type = 'person' and sendable_id = ${p})
  or (type like 'incoming_%' and receivable_type = 'person' and receivable_id = ${p}))`;

/** A chunk of rows with ids, `after` them in id order. */
const byId = <T extends { id: number }>(rows: T[], moved: (rows: T[]) => MovedRows): StageChunk => ({
  moved: moved(rows),
  rows: rows.length,
  full: rows.length >= MOVE_ROWS_CHUNK,
  last: rows.at(-1)?.id ?? 0,
});

const feedChunk = async (deps: Deps, p: number, after: number) =>
  byId(
    await deps.db.all<MovedFeedRow>(sql`
    select id, type, sendable_type as sendableType, sendable_id as sendableId, receivable_type as receivableType,
           receivable_id as receivableId, call_time as callTime, message, message_id as messageId, created_at as createdAt
    from activities where id > ${after} and ${visibleTo(p)} order by id limit ${MOVE_ROWS_CHUNK}`),
    (feed) => ({ feed }),
  );

const requestChunk = async (deps: Deps, p: number, after: number) =>
  byId(
    await deps.db.all<MovedTrustRequestRow>(sql`
    select id, requester_id as requesterId, contact_reason as contactReason, status, decided_at as decidedAt,
           created_at as createdAt, updated_at as updatedAt
    from trust_requests where target_id = ${p} and id > ${after} order by id limit ${MOVE_ROWS_CHUNK}`),
    (trustRequests) => ({ trustRequests }),
  );

const blockedChunk = async (deps: Deps, p: number, after: number) =>
  byId(
    await deps.db.all<BlockedSource>(sql`
    select id, caller_id as callerId, country_code as countryCode, phone_number as phoneNumber, created_at as createdAt
    from blocked_calls where person_id = ${p} and id > ${after} order by id limit ${MOVE_ROWS_CHUNK}`),
    (blockedCalls) => ({ blockedCalls }),
  );

/**
 * 500 contacts with their emails, phones and addresses, read in one D1 batch
 * (one transaction, so the values are those of exactly these contacts); the
 * values in the order of their D1 ids, which is the order they were written in.
 */
async function contactChunk(deps: Deps, p: number, after: number): Promise<StageChunk> {
  const { db } = deps;
  const mine = and(eq(contacts.ownerId, p), gt(contacts.id, after));
  const chunk = db
    .select({ id: contacts.id })
    .from(contacts)
    .where(mine)
    .orderBy(asc(contacts.id))
    .limit(MOVE_ROWS_CHUNK);
  const [rows, emails, phones, addresses] = await db.batch([
    db
      .select({
        id: contacts.id,
        displayName: contacts.displayName,
        birthday: contacts.birthday,
        labels: contacts.labels,
        createdAt: contacts.createdAt,
        updatedAt: contacts.updatedAt,
      })
      .from(contacts)
      .where(mine)
      .orderBy(asc(contacts.id))
      .limit(MOVE_ROWS_CHUNK),
    db
      .select({ contactId: contactEmails.contactId, value: contactEmails.email })
      .from(contactEmails)
      .where(inArray(contactEmails.contactId, chunk))
      .orderBy(asc(contactEmails.id)),
    db
      .select({ contactId: contactPhones.contactId, value: contactPhones.e164 })
      .from(contactPhones)
      .where(inArray(contactPhones.contactId, chunk))
      .orderBy(asc(contactPhones.id)),
    db
      .select({ contactId: contactAddresses.contactId, value: contactAddresses.line })
      .from(contactAddresses)
      .where(inArray(contactAddresses.contactId, chunk))
      .orderBy(asc(contactAddresses.id)),
  ]);
  const moved = new Map<number, MovedContact>(
    rows.map((row) => [
      row.id,
      {
        ...row,
        emails: [],
        phones: [],
        addresses: [],
        createdAt: row.createdAt.getTime(),
        updatedAt: row.updatedAt.getTime(),
      },
    ]),
  );
  for (const { contactId, value } of emails) moved.get(contactId)?.emails.push(value);
  for (const { contactId, value } of phones) moved.get(contactId)?.phones.push(value);
  for (const { contactId, value } of addresses) moved.get(contactId)?.addresses.push(value);
  return byId(rows, () => ({ contacts: [...moved.values()] }));
}

/** The tombstones of the contacts the person deleted, by their D1 ids. */
const tombstoneChunk = async (deps: Deps, p: number, after: number) =>
  byId(
    await deps.db
      .select({
        id: contactTombstones.id,
        contactId: contactTombstones.contactId,
        deletedAt: contactTombstones.deletedAt,
      })
      .from(contactTombstones)
      .where(and(eq(contactTombstones.ownerId, p), gt(contactTombstones.id, after)))
      .orderBy(asc(contactTombstones.id))
      .limit(MOVE_ROWS_CHUNK),
    (rows) => ({ tombstones: rows.map((row) => ({ contactId: row.contactId, deletedAt: row.deletedAt.getTime() })) }),
  );

/**
 * The person's decisions about people and companies and the decisions others
 * made about them (the mirror), up to 500 of each in one D1 batch, each in the
 * order of the other party's id, all `after` the same id. While one of them
 * was full the next chunk starts after the smallest last id of the full ones,
 * so a kind that was not full is read again from there: its rows are copied
 * once (the object keeps a row it already has, or the newer one).
 */
async function decisionChunk(deps: Deps, p: number, after: number): Promise<StageChunk> {
  const { db } = deps;
  const [decided, settings, mirror] = await db.batch([
    db
      .select({ personId: personTrust.trustedPersonId, trusted: personTrust.trusted, updatedAt: personTrust.updatedAt })
      .from(personTrust)
      .where(and(eq(personTrust.personId, p), gt(personTrust.trustedPersonId, after)))
      .orderBy(asc(personTrust.trustedPersonId))
      .limit(MOVE_ROWS_CHUNK),
    db
      .select({ companyId: companyTrust.companyId, trust: companyTrust.trust, updatedAt: companyTrust.updatedAt })
      .from(companyTrust)
      .where(and(eq(companyTrust.personId, p), gt(companyTrust.companyId, after)))
      .orderBy(asc(companyTrust.companyId))
      .limit(MOVE_ROWS_CHUNK),
    db
      .select({ personId: personTrust.personId, trusted: personTrust.trusted, decidedAt: personTrust.updatedAt })
      .from(personTrust)
      .where(and(eq(personTrust.trustedPersonId, p), gt(personTrust.personId, after)))
      .orderBy(asc(personTrust.personId))
      .limit(MOVE_ROWS_CHUNK),
  ]);
  const lastOfFull = <T>(rows: T[], id: (row: T) => number) =>
    rows.length >= MOVE_ROWS_CHUNK ? [id(rows.at(-1)!)] : [];
  const fullLasts = [
    ...lastOfFull(decided, (row) => row.personId),
    ...lastOfFull(settings, (row) => row.companyId),
    ...lastOfFull(mirror, (row) => row.personId),
  ];
  return {
    moved: {
      decisions: decided.map((row) => ({ ...row, updatedAt: row.updatedAt.getTime() })),
      companySettings: settings.map((row) => ({ ...row, updatedAt: row.updatedAt.getTime() })),
      mirror: mirror.map((row) => ({ ...row, decidedAt: row.decidedAt.getTime() })),
    },
    rows: decided.length + settings.length + mirror.length,
    full: fullLasts.length > 0,
    last: fullLasts.length > 0 ? Math.min(...fullLasts) : 0,
  };
}

type MoveMessage = Extract<BackgroundMessage, { kind: "move-person" }>;
type CopyStage = Exclude<MoveMessage["stage"], "compare">;

const CHUNKS: Record<CopyStage, (deps: Deps, p: number, after: number) => Promise<StageChunk>> = {
  feed: feedChunk,
  blocked: blockedChunk,
  requests: requestChunk,
  contacts: contactChunk,
  tombstones: tombstoneChunk,
  decisions: decisionChunk,
};
const FOLLOWING = {
  feed: "blocked",
  blocked: "requests",
  requests: "contacts",
  contacts: "tombstones",
  tombstones: "decisions",
  decisions: "compare",
} as const satisfies Record<CopyStage, MoveMessage["stage"]>;

/**
 * What D1 holds of person `p`: per kind, how many rows (tombstones: those the object keeps too, the last
 * 90 days), and for the kinds the object imports once the largest key (`…Max`, 0: none), as its marks count.
 */
type Kind = "feed" | "blocked" | "requests" | "contacts" | "tombstones" | "decisions" | "companySettings" | "mirror";
type D1Counts = Record<Kind, number> & Record<`${MarkedKind}Max`, number>;

const d1Counts = async (deps: Deps, p: number, now: Date) =>
  (
    await deps.db.all<D1Counts>(sql`select
      (select count(*) from activities where ${visibleTo(p)}) as feed,
      (select count(*) from blocked_calls where person_id = ${p}) as blocked,
      (select count(*) from trust_requests where target_id = ${p}) as requests,
      (select count(*) from contacts where owner_id = ${p}) as contacts,
      (select count(distinct contact_id) from contact_tombstones
        where owner_id = ${p} and deleted_at >= ${now.getTime() - KEEP.tombstoneDays * DAY_MS}) as tombstones,
      (select count(*) from person_trust where person_id = ${p}) as decisions,
      (select count(*) from company_trust where person_id = ${p}) as companySettings,
      (select count(*) from person_trust where trusted_person_id = ${p}) as mirror,
      (select coalesce(max(id), 0) from activities where ${visibleTo(p)}) as feedMax,
      (select coalesce(max(id), 0) from blocked_calls where person_id = ${p}) as blockedCallsMax,
      (select coalesce(max(id), 0) from trust_requests where target_id = ${p}) as trustRequestsMax,
      (select coalesce(max(id), 0) from contacts where owner_id = ${p}) as contactsMax,
      (select coalesce(max(trusted_person_id), 0) from person_trust where person_id = ${p}) as decisionsMax,
      (select coalesce(max(company_id), 0) from company_trust where person_id = ${p}) as companySettingsMax`)
  )[0]!;

/** One chunk of one person's move; the message that continues it, if any. */
export async function movePersonChunk(deps: Deps, body: MoveMessage, now: Date) {
  const { personId, stage, after } = body;
  const object = deps.objects.of(personId);
  if (stage !== "compare") {
    const chunk = await CHUNKS[stage](deps, personId, after);
    const held = chunk.rows > 0 ? await deps.objects.write(personId, (person) => person.importRows(chunk.moved)) : null;
    // The person's move finished earlier (a message of an older run, or a rerun for someone D1 does not
    // record as moved yet): nothing more to copy; the comparison records it in D1.
    if (held?.finished) {
      const compare: MoveMessage = { kind: "move-person", personId, stage: "compare", after: 0 };
      return { done: { personId, stage, rows: 0, state: "moved" }, next: compare };
    }
    const next: MoveMessage = chunk.full
      ? { ...body, after: chunk.last }
      : { kind: "move-person", personId, stage: FOLLOWING[stage], after: 0 };
    return { done: { personId, stage, rows: chunk.rows }, next };
  }
  // compare: whether the object imported every row D1 holds of the person, and how many it holds now.
  const d1 = await d1Counts(deps, personId, now);
  const held = await object.counts(
    Object.fromEntries(MARKED.map((kind) => [kind, d1[`${kind}Max`]])) as Record<MarkedKind, number>,
  );
  const d1Rows =
    d1.feed + d1.blocked + d1.requests + d1.contacts + d1.tombstones + d1.decisions + d1.companySettings + d1.mirror;
  const objectRows =
    held.movedFeed +
    held.movedBlockedCalls +
    held.movedTrustRequests +
    held.movedContacts +
    held.tombstones +
    held.decisions +
    held.companySettings +
    held.mirror;
  // Every D1 row of the kinds imported once was imported, whatever the person deleted or cleared since: the
  // object's marks reach D1's largest keys (a kind imported before the object kept marks adopted them just
  // now). The tombstones and the mirror have no D1 ids there, and the object may have made more: at least
  // D1's. An object whose move finished (a comparison whose D1 write failed) is moved.
  const importedAll = MARKED.every((kind) => held.marks[kind] >= d1[`${kind}Max`]);
  const complete = held.finished || (importedAll && held.tombstones >= d1.tombstones && held.mirror >= d1.mirror);
  const state = complete ? "moved" : "mismatch";
  const record = deps.db
    .insert(personMoves)
    .values({ personId, state, d1Rows, objectRows, updatedAt: now })
    .onConflictDoUpdate({ target: personMoves.personId, set: { state, d1Rows, objectRows, updatedAt: now } });
  if (state === "moved") {
    // The object refuses every later import (a rerun never brings back what the person changed since); it
    // is told D1's facts about the person (number, companies) and writes its trust-lookup keys from what it
    // now holds; a refusal leaves the work due for the index sweep.
    await deps.objects.write(personId, (person) => person.finishMove());
    await deps.db.batch([record, markStalePerson(deps.db, personId, now)]);
    await makeCurrent(deps, { keys: [KEY_KINDS.prs.key(personId)], now });
  } else {
    await record;
  }
  return { done: { personId, stage, state, d1Rows, objectRows } };
}

/**
 * One chunk of the walk over people: records them as pending and sends their
 * `move-person` messages. A person whose move finished (`moved`) is skipped:
 * a second run never re-imports what they changed in their object since.
 */
export async function movePeopleChunk(deps: Deps, after: number, now: Date) {
  const people = await deps.db.all<{ id: number; moved: number }>(
    sql`select p.id, coalesce(m.state = 'moved', 0) as moved from people p
        left join ${personMoves} m on m.person_id = p.id
        where p.id > ${after} order by p.id limit ${MOVE_PEOPLE_CHUNK}`,
  );
  const toMove = people.filter((p) => !p.moved);
  if (toMove.length > 0) {
    const ids = JSON.stringify(toMove.map((p) => p.id));
    await deps.db.run(sql`
      insert into ${personMoves} (person_id, state, updated_at)
      select value, 'pending', ${now.getTime()} from json_each(${ids}) where true
      on conflict (person_id) do update set state = 'pending', updated_at = excluded.updated_at`);
    await deps.backgroundQueue.sendBatch(
      toMove.map((p) => ({ body: { kind: "move-person", personId: p.id, stage: "feed", after: 0 } as const })),
    );
  }
  const more = people.length >= MOVE_PEOPLE_CHUNK;
  return {
    done: { people: people.length },
    ...(more ? { next: { kind: "move-people", after: people.at(-1)!.id } as const } : {}),
  };
}

/** Starts (or restarts) the move of every person's rows. */
export async function startPersonMoves(deps: Deps) {
  await deps.backgroundQueue.send({ kind: "move-people", after: 0 });
}

/** Where the move stands: people by state. */
export async function personMoveStatus(deps: Deps) {
  const rows = await deps.db
    .select({ state: personMoves.state, n: count() })
    .from(personMoves)
    .groupBy(personMoves.state)
    .all();
  const by = Object.fromEntries(rows.map((row) => [row.state, row.n]));
  const [{ people }] = (await deps.db.all<{ people: number }>(sql`select count(*) as people from people`)) as [
    { people: number },
  ];
  return { people, pending: by.pending ?? 0, moved: by.moved ?? 0, mismatch: by.mismatch ?? 0 };
}
