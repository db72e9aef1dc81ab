import { and, eq, sql } from "drizzle-orm";
import type { DrizzleSqliteDODatabase } from "drizzle-orm/durable-sqlite";
import type { CallPolicy } from "../../domain/caller-verification";
import { inList } from "../../db/sql";
import { deliverEach } from "./outboxes";
import * as keys from "./index-keys";
import type { PersonStub } from "./stub";
import * as requests from "./requests";
import { companyTrust, mirrorOutbox, personTrust, settings } from "./schema";

/*
 * The person's trust (docs/architecture.md, "What crosses people"): their
 * decisions about people and companies, who may ring them, and the outbox of
 * mirrors on their way (the mirror they make, others' decisions about this
 * person, is mirror.ts).
 * Functions over the object's database, run inside its methods; only
 * `sendMirrors` awaits (after the commit). A change marks the receiver
 * record's key due in its own transaction (index-keys.ts).
 */

type Db = DrizzleSqliteDODatabase;

/**
 * This person decides about `other`, who asked them for trust (pending or
 * decided before) or about whom they decided already; false (nothing
 * written) for anyone else. The decision, the closed request and the mirror
 * to send: run in one transaction.
 */
export function decide(db: Db, other: number, trusted: boolean, now: number): boolean {
  const before = db
    .select({ at: personTrust.updatedAt })
    .from(personTrust)
    .where(eq(personTrust.personId, other))
    .get();
  if (!before && !requests.askedBy(db, other)) return false;
  // Each decision about `other` is later than the one before, even within one millisecond: the other's
  // mirror keeps the latest by this time, so two mirrors sent at once can never tie and be kept in
  // the order they happened to land.
  const at = Math.max(now, (before?.at.getTime() ?? 0) + 1);
  db.insert(personTrust)
    .values({ personId: other, trusted, updatedAt: new Date(at) })
    .onConflictDoUpdate({ target: personTrust.personId, set: { trusted, updatedAt: new Date(at) } })
    .run();
  requests.close(db, other, trusted);
  db.insert(mirrorOutbox)
    .values({ personId: other, trusted, decidedAt: at })
    .onConflictDoUpdate({ target: mirrorOutbox.personId, set: { trusted, decidedAt: at } })
    .run();
  keys.markStale(db, keys.receiverKeys(db));
  return true;
}

/** Whom this person decided about, and how (`trusted`), for these ids; all when `ids` is left out. */
export function decisions(db: Db, ids?: number[]): { personId: number; trusted: boolean }[] {
  return db
    .select({ personId: personTrust.personId, trusted: personTrust.trusted })
    .from(personTrust)
    .where(ids ? inList(personTrust.personId, ids) : undefined)
    .all();
}

/**
 * Sets (null: removes) this person's trust in a company, in one transaction.
 * `visible`: D1 found the company among those they may name; a company they
 * already have a setting for is visible too. Answers null for anything else
 * (nothing written), false when nothing changed, true when it did.
 */
export function setCompanyTrust(
  db: Db,
  companyId: number,
  trust: "trusted" | "negative" | null,
  visible: boolean,
): boolean | null {
  const existing = db.select().from(companyTrust).where(eq(companyTrust.companyId, companyId)).get();
  if (!visible && !existing) return null;
  if (existing?.trust === trust) return false;
  if (trust === null) db.delete(companyTrust).where(eq(companyTrust.companyId, companyId)).run();
  else
    db.insert(companyTrust)
      .values({ companyId, trust, updatedAt: new Date() })
      .onConflictDoUpdate({ target: companyTrust.companyId, set: { trust, updatedAt: new Date() } })
      .run();
  keys.markStale(db, keys.receiverKeys(db));
  return true;
}

/** This person's company settings (all, or those of `companyIds`). */
export function companySettings(
  db: Db,
  companyIds?: number[],
): { companyId: number; trust: "trusted" | "negative"; updatedAt: number }[] {
  return db
    .select()
    .from(companyTrust)
    .where(companyIds ? inList(companyTrust.companyId, companyIds) : undefined)
    .all()
    .map((row) => ({ ...row, updatedAt: row.updatedAt.getTime() }));
}

/** Who may ring this person (`everyone` until they choose). */
export const callPolicy = (db: Db): CallPolicy =>
  db.select({ calls: settings.calls }).from(settings).get()?.calls ?? "everyone";

/** Sets who may ring this person, in one transaction; false when nothing changed. */
export function setCallPolicy(db: Db, calls: CallPolicy): boolean {
  if (callPolicy(db) === calls) return false;
  const updatedAt = new Date();
  db.insert(settings)
    .values({ one: 1, calls, updatedAt })
    .onConflictDoUpdate({ target: settings.one, set: { calls, updatedAt } })
    .run();
  keys.markStale(db, keys.receiverKeys(db));
  return true;
}

/** How many mirrors are on their way. */
export const mirrorsQueued = (db: Db): number =>
  db
    .select({ n: sql<number>`count(*)` })
    .from(mirrorOutbox)
    .get()?.n ?? 0;

/**
 * Sends the mirrors not yet delivered (from person `me`) to the people they
 * are about; answers whether one failed (it stays queued for the alarm).
 */
export async function sendMirrors(db: Db, me: number | null, peer: (personId: number) => PersonStub): Promise<boolean> {
  const due = db.select().from(mirrorOutbox).all();
  if (me === null || due.length === 0) return false;
  return deliverEach(
    due,
    async (row) => {
      await peer(row.personId).receiveMirror(me, row.trusted, row.decidedAt);
      db.delete(mirrorOutbox)
        .where(and(eq(mirrorOutbox.personId, row.personId), eq(mirrorOutbox.decidedAt, row.decidedAt)))
        .run();
    },
    "a trust decision's mirror did not reach the other person; the alarm retries it",
  );
}
