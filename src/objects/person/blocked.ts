import { desc, sql } from "drizzle-orm";
import type { DrizzleSqliteDODatabase } from "drizzle-orm/durable-sqlite";
import type { BlockedCallRow } from "./api";
import { nextId } from "./ids";
import { KEEP, utcDay } from "./limits";
import { blockedCalls } from "./schema";

/*
 * The calls blocked for the person (docs/decisions.md, "Caller
 * verification"): appended by the lookup, the newest `KEEP.blockedCalls`
 * kept. Functions over the object's database, run inside its methods.
 */

type Db = DrizzleSqliteDODatabase;

/**
 * Appends calls the provider was told not to put through, each with an id of its own (in person `me`'s
 * slot: the `blocked_call_id` an app de-duplicates by); keeps the newest. Returns the calls with their ids
 * (the last one's is the id a push names, push.ts).
 */
export function append(db: Db, me: number, calls: BlockedCallRow[]): (BlockedCallRow & { id: number })[] {
  let last =
    db.select({ id: blockedCalls.id }).from(blockedCalls).orderBy(desc(blockedCalls.id)).limit(1).get()?.id ?? 0;
  const stored = calls.map((call) => {
    last = nextId(me, last);
    db.insert(blockedCalls)
      .values({ ...call, id: last, createdAt: new Date(call.createdAt) })
      .run();
    return { ...call, id: last };
  });
  db.delete(blockedCalls)
    .where(
      sql`${blockedCalls.id} <= (select id from ${blockedCalls} order by id desc limit 1 offset ${KEEP.blockedCalls})`,
    )
    .run();
  return stored;
}

/** The newest `limit` blocked calls, newest first. */
export const latest = (db: Db, limit: number) =>
  db.select().from(blockedCalls).orderBy(desc(blockedCalls.createdAt), desc(blockedCalls.id)).limit(limit).all();

/** Development only: wipes the blocked calls, and their count of unlisted ones. */
export const clear = (db: Db, storage: DurableObjectStorage) => {
  db.delete(blockedCalls).run();
  storage.kv.delete(UNLISTED);
};

/**
 * Blocked calls counted, not listed: calls to the person's number past its share of the provider's
 * budget (docs/decisions.md, "Rate limits"). A call centre's
 * number called 1,000 times a second keeps its newest listed calls and a count of the rest: one
 * storage value, today's count (UTC) and the total, written at most once per append.
 */
const UNLISTED = "blocked-unlisted";
type Unlisted = { day: number; today: number; total: number };

/** Counts `unlisted` calls and appends `calls` (`append`); returns those appended. */
export function record(db: Db, storage: DurableObjectStorage, me: number, calls: BlockedCallRow[], unlisted: number) {
  if (unlisted > 0) countUnlisted(storage, unlisted, Date.now());
  return calls.length > 0 ? append(db, me, calls) : [];
}

function countUnlisted(storage: DurableObjectStorage, calls: number, now: number): void {
  const day = utcDay(now);
  const held = storage.kv.get<Unlisted>(UNLISTED);
  const today = held?.day === day ? held.today : 0;
  storage.kv.put(UNLISTED, { day, today: today + calls, total: (held?.total ?? 0) + calls });
}

/** The calls counted, not listed: `today`'s (UTC) and the `total` since the object began. */
export function unlisted(storage: DurableObjectStorage, now: number): { today: number; total: number } {
  const held = storage.kv.get<Unlisted>(UNLISTED);
  return { today: held?.day === utcDay(now) ? held.today : 0, total: held?.total ?? 0 };
}
