import { desc, sql } from "drizzle-orm";
import type { DrizzleSqliteDODatabase } from "drizzle-orm/durable-sqlite";
import type { BlockedCallRow } from "./api";
import { nextId } from "./ids";
import { KEEP } from "./limits";
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

/** Development only: wipes the blocked calls. */
export const clear = (db: Db) => db.delete(blockedCalls).run();
