import { eq, sql } from "drizzle-orm";
import type { DrizzleSqliteDODatabase } from "drizzle-orm/durable-sqlite";
import { inList } from "../../db/sql";
import { unnamedParty, type FeedRecord, type Party, type PersonParty } from "../../domain/activity";
import type { Names, PeerCard } from "../../domain/facts";
import { readFacts } from "./index-keys";
import { peers } from "./schema";
import { trustedMe } from "./mirror";

/*
 * Names travel with facts (docs/architecture.md): each object holds its own
 * person's names (their facts) and the names of the people it heard from —
 * a chat either way, a trust request, a feed page that named them — as their
 * own objects told them (`peers`). Whether a reader sees another person's
 * names is decided here, from what this object knows (docs/security.md, "What
 * a stranger learns"): that person shares a company with the reader (their
 * companies as told, the reader's from the facts), or trusted the reader
 * (the mirror). A company is named only to its members.
 */

type Db = DrizzleSqliteDODatabase;

/** How long a page trusts what it heard of a person before asking their object again (ms). */
export const PEER_FRESH_MS = 86_400_000;

/**
 * Keeps what `card`'s object told about its person at `at` (ms), replacing what was known unless that
 * came from newer facts (a chat's card can arrive after a page asked their object afresh).
 */
export function learn(db: Db, card: PeerCard, at: number): void {
  const row = {
    firstName: card.first_name,
    middleName: card.middle_name,
    lastName: card.last_name,
    companies: card.companies,
    learnedAt: at,
    version: card.version,
  };
  db.insert(peers)
    .values({ personId: card.id, ...row })
    .onConflictDoUpdate({ target: peers.personId, set: row, setWhere: sql`excluded.version >= ${peers.version}` })
    .run();
}

/** The person is no account (any more): what was known of them goes. */
export function forget(db: Db, personId: number): void {
  db.delete(peers).where(eq(peers.personId, personId)).run();
}

/** Which of `ids` this object knows nothing of, or heard of longer than `PEER_FRESH_MS` ago. */
export function unheard(db: Db, ids: number[], now: number): number[] {
  if (ids.length === 0) return [];
  const fresh = new Set(
    db
      .select({ id: peers.personId })
      .from(peers)
      .where(sql`${inList(peers.personId, ids)} and ${peers.learnedAt} > ${now - PEER_FRESH_MS}`)
      .all()
      .map((row) => row.id),
  );
  return ids.filter((id) => !fresh.has(id));
}

/** The names this object holds of `ids` (those it heard of), whoever may see them. */
export function namesOf(db: Db, ids: number[]): Map<number, Names> {
  if (ids.length === 0) return new Map();
  const rows = db.select().from(peers).where(inList(peers.personId, ids)).all();
  return new Map(
    rows.map((row) => [
      row.personId,
      { first_name: row.firstName, middle_name: row.middleName, last_name: row.lastName },
    ]),
  );
}

/** The people a page of the feed names (parties of type person), once each. */
export const peopleOn = (rows: FeedRecord[]): number[] => [
  ...new Set(
    rows.flatMap((row) => [
      ...(row.sendableType === "person" ? [row.sendableId] : []),
      ...(row.receivableType === "person" ? [row.receivableId] : []),
    ]),
  ),
];

/**
 * The parties of `rows` as this object's person (`me`) may see them: their
 * own names; another person's when they know the reader, else only the id; a
 * company's name to its members. A person this object never heard of reads
 * as `absent` gives: null (a page, which asked their object first: no
 * account) or the id only (a live stream, which asks nobody).
 */
export function partiesFor(
  db: Db,
  me: number,
  rows: FeedRecord[],
  absent: "null" | "unnamed",
): (type: "person" | "company", id: number) => Party {
  const facts = readFacts(db);
  const mine = new Set(facts?.companies ?? []);
  const companyNames = new Map((facts?.profile?.companies ?? []).map((c) => [c.id, c.name]));
  const others = peopleOn(rows).filter((id) => id !== me);
  const rowsOf = new Map(
    (others.length === 0 ? [] : db.select().from(peers).where(inList(peers.personId, others)).all()).map((row) => [
      row.personId,
      row,
    ]),
  );
  const trusted = new Set(others.length === 0 ? [] : trustedMe(db, others));
  return (type, id) => {
    if (type === "company") return { id, name: companyNames.get(id) ?? null };
    if (id === me) {
      const own = facts?.profile;
      return own ? named(id, own) : unnamedParty(type, id);
    }
    const peer = rowsOf.get(id);
    if (!peer) return absent === "null" ? null : unnamedParty(type, id);
    const knows = trusted.has(id) || peer.companies.some((company) => mine.has(company));
    return knows
      ? named(id, { first_name: peer.firstName, middle_name: peer.middleName, last_name: peer.lastName })
      : unnamedParty(type, id);
  };
}

const named = (id: number, names: Names): PersonParty => ({
  id,
  first_name: names.first_name,
  middle_name: names.middle_name,
  last_name: names.last_name,
});
