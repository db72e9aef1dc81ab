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
 * Appends calls the provider was told not to put through (ids in person `me`'s slot); keeps the
 * newest. Answers the last one's id (null: none), the id a push names (push.ts).
 */
export function append(db: Db, me: number, calls: BlockedCallRow[]): number | null {
  let last =
    db.select({ id: blockedCalls.id }).from(blockedCalls).orderBy(desc(blockedCalls.id)).limit(1).get()?.id ?? 0;
  for (const call of calls) {
    last = nextId(me, last);
    db.insert(blockedCalls)
      .values({ ...call, id: last, createdAt: new Date(call.createdAt) })
      .run();
  }
  db.delete(blockedCalls)
    .where(
      sql`${blockedCalls.id} <= (select id from ${blockedCalls} order by id desc limit 1 offset ${KEEP.blockedCalls})`,
    )
    .run();
  return calls.length > 0 ? last : null;
}

/** The newest `limit` blocked calls, newest first. */
export const latest = (db: Db, limit: number) =>
  db.select().from(blockedCalls).orderBy(desc(blockedCalls.createdAt), desc(blockedCalls.id)).limit(limit).all();

/** Development only: wipes the blocked calls. */
export const clear = (db: Db) => db.delete(blockedCalls).run();
