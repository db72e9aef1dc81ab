import { count, sql } from "drizzle-orm";
import { personMoves } from "../db/schema";
import { batchableAll } from "../db/sql";
import { KEEP } from "../objects/person/limits";
import type { MovedFeedRow, MovedTrustRequestRow } from "../objects/person/person";
import type { BackgroundMessage } from "../queue/messages";
import type { Deps } from "./outbox";

/*
 * The one-time move of each person's own rows (activity, blocked calls, the
 * trust requests they received) from D1 into their object
 * (docs/architecture.md, "The one-time move from D1"). A deployment that kept
 * activity and blocked calls in D1 runs it once (`npm run admin -- move-person-data`):
 * - `move-people` walks the people table, 100 ids per message, records each
 *   person as `pending` and sends one `move-person` message per person;
 * - `move-person` copies one chunk of one kind of that person's rows into
 *   their object (inserted under their D1 ids; a repeated chunk changes
 *   nothing), continues while the chunk was full, and at the end compares
 *   how many of their D1 rows the object holds: `moved`, or `mismatch` for
 *   the operator to look at (a rerun repeats only the comparison's work).
 * Each message is one D1 read (plus the final counts), one object call and
 * at most one queue send: far inside one invocation's limits. The D1 tables
 * stay until a later migration drops them, once every person is `moved`.
 */

/** People per `move-people` message; rows per `move-person` chunk. */
export const MOVE_PEOPLE_CHUNK = 100;
export const MOVE_ROWS_CHUNK = 500;

type BlockedSource = {
  id: number;
  callerId: string | null;
  countryCode: string;
  phoneNumber: string;
  createdAt: number;
};

/** The activities person `p` sees (the rule the feed had in D1): messages either way, call records they wrote. */
const visibleTo = (p: number) => sql`(
  (type like 'chat_%' and ((sendable_type = 'person' and sendable_id = ${p}) or (receivable_type = 'person' and receivable_id = ${p})))
  or (type like 'outgoing_%' and sendable_type = 'person' and sendable_id = ${p})
  or (type like 'incoming_%' and receivable_type = 'person' and receivable_id = ${p}))`;

const feedRows = (deps: Deps, p: number, after: number, limit: number) =>
  deps.db.all<MovedFeedRow>(sql`
    select id, type, sendable_type as sendableType, sendable_id as sendableId, receivable_type as receivableType,
           receivable_id as receivableId, call_time as callTime, message, message_id as messageId, created_at as createdAt
    from activities where id > ${after} and ${visibleTo(p)} order by id limit ${limit}`);

const requestRows = (deps: Deps, p: number, after: number, limit: number) =>
  deps.db.all<MovedTrustRequestRow>(sql`
    select id, requester_id as requesterId, contact_reason as contactReason, status, decided_at as decidedAt,
           created_at as createdAt, updated_at as updatedAt
    from trust_requests where target_id = ${p} and id > ${after} order by id limit ${limit}`);

const blockedRows = (deps: Deps, p: number, after: number, limit: number) =>
  deps.db.all<BlockedSource>(sql`
    select id, caller_id as callerId, country_code as countryCode, phone_number as phoneNumber, created_at as createdAt
    from blocked_calls where person_id = ${p} and id > ${after} order by id limit ${limit}`);

type MoveMessage = Extract<BackgroundMessage, { kind: "move-person" }>;

/** One chunk of one person's move; the message that continues it, if any. */
export async function movePersonChunk(deps: Deps, body: MoveMessage, now: Date) {
  const { personId, stage, after } = body;
  const object = deps.persons.of(personId);
  if (stage !== "compare") {
    const read = { feed: feedRows, blocked: blockedRows, requests: requestRows }[stage];
    const rows = await read(deps, personId, after, MOVE_ROWS_CHUNK);
    if (rows.length > 0) {
      await object.importRows({
        feed: stage === "feed" ? (rows as MovedFeedRow[]) : [],
        blockedCalls: stage === "blocked" ? (rows as BlockedSource[]) : [],
        trustRequests: stage === "requests" ? (rows as MovedTrustRequestRow[]) : [],
      });
    }
    const full = rows.length >= MOVE_ROWS_CHUNK;
    const following = { feed: "blocked", blocked: "requests", requests: "compare" } as const;
    const next: MoveMessage = full
      ? { ...body, after: rows.at(-1)!.id }
      : { kind: "move-person", personId, stage: following[stage], after: 0 };
    return { done: { personId, stage, rows: rows.length }, next };
  }
  // compare: how many of the person's D1 rows the object now holds (rows it made itself are not counted).
  const [[feedCount], [blockedCount], [requestCount]] = await deps.db.batch([
    batchableAll<{ n: number }>(deps.db, sql`select count(*) as n from activities where ${visibleTo(personId)}`),
    batchableAll<{ n: number }>(deps.db, sql`select count(*) as n from blocked_calls where person_id = ${personId}`),
    batchableAll<{ n: number }>(deps.db, sql`select count(*) as n from trust_requests where target_id = ${personId}`),
  ]);
  const d1Feed = feedCount?.n ?? 0;
  const d1Blocked = blockedCount?.n ?? 0;
  const d1Requests = requestCount?.n ?? 0;
  const held = await object.counts();
  const d1Rows = d1Feed + d1Blocked + d1Requests;
  const objectRows = held.movedFeed + held.movedBlockedCalls + held.movedTrustRequests;
  // Every D1 activity row and trust request must be there; blocked calls too, unless the object is at its cap of the newest 1,000.
  const complete =
    held.movedFeed === d1Feed &&
    held.movedTrustRequests === d1Requests &&
    (held.movedBlockedCalls === d1Blocked || held.blockedCalls >= KEEP.blockedCalls);
  const state = complete ? "moved" : "mismatch";
  await deps.db
    .insert(personMoves)
    .values({ personId, state, d1Rows, objectRows, updatedAt: now })
    .onConflictDoUpdate({ target: personMoves.personId, set: { state, d1Rows, objectRows, updatedAt: now } });
  return { done: { personId, stage, state, d1Rows, objectRows } };
}

/** One chunk of the walk over people: records them as pending and sends their `move-person` messages. */
export async function movePeopleChunk(deps: Deps, after: number, now: Date) {
  const people = await deps.db.all<{ id: number }>(
    sql`select id from people where id > ${after} order by id limit ${MOVE_PEOPLE_CHUNK}`,
  );
  if (people.length > 0) {
    const ids = JSON.stringify(people.map((p) => p.id));
    await deps.db.run(sql`
      insert into ${personMoves} (person_id, state, updated_at)
      select value, 'pending', ${now.getTime()} from json_each(${ids}) where true
      on conflict (person_id) do update set state = 'pending', updated_at = excluded.updated_at`);
    await deps.backgroundQueue.sendBatch(
      people.map((p) => ({ body: { kind: "move-person", personId: p.id, stage: "feed", after: 0 } as const })),
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
