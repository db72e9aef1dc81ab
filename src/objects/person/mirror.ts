import { and, eq, sql } from "drizzle-orm";
import type { DrizzleSqliteDODatabase } from "drizzle-orm/durable-sqlite";
import { inList } from "../../db/sql";
import { MIRROR_INLINE, type ContactRead } from "./api";
import { trustedBy } from "./schema";

/*
 * The mirror (docs/architecture.md, "What crosses people"): others' decisions
 * about this person, as their objects sent them (trust.ts `sendMirrors`).
 * Read by the person's own trust, their contacts' reads and the names their
 * feed shows (peers.ts); it depends on nothing else of the object.
 */

type Db = DrizzleSqliteDODatabase;

/** The mirror: `from` decided about this person at `decidedAt` (ms); an older decision arriving late changes nothing. */
export function receiveMirror(db: Db, from: number, trusted: boolean, decidedAt: number): void {
  db.insert(trustedBy)
    .values({ personId: from, trusted, decidedAt })
    .onConflictDoUpdate({
      target: trustedBy.personId,
      set: { trusted, decidedAt },
      setWhere: sql`${trustedBy.decidedAt} <= excluded.decided_at`,
    })
    .run();
}

/** The people among `ids` who trusted this person (the mirror); all of them when `ids` is left out. */
export function trustedMe(db: Db, ids?: number[]): number[] {
  return db
    .select({ id: trustedBy.personId })
    .from(trustedBy)
    .where(and(eq(trustedBy.trusted, true), ids ? inList(trustedBy.personId, ids) : undefined))
    .all()
    .map((row) => row.id);
}

/** Who trusted this person, as a read carries it: everyone up to `MIRROR_INLINE`, else nobody (`trustedMeOf: []`). */
export function mirrorForRead(db: Db): Pick<ContactRead, "trustedMe" | "trustedMeOf"> {
  // Raw: every contacts read asks, and drizzle's query building cost more than the statement.
  const ids = db
    .values<[number]>(sql`select person_id from trusted_by where trusted = 1 limit ${MIRROR_INLINE + 1}`)
    .map((row) => row[0]);
  return ids.length > MIRROR_INLINE ? { trustedMe: [], trustedMeOf: [] } : { trustedMe: ids };
}
