import { and, asc, eq, gt, inArray, sql } from "drizzle-orm";
import {
  companies,
  companyScanMoves,
  exposureHistory,
  exposures,
  memberships,
  movedExposures,
  scanResults,
  scans,
} from "../db/schema";
import { inList } from "../db/sql";
import type { ScanSideChunk } from "../domain/company-scans";
import type { BackgroundMessage, Chunk } from "../domain/queue-messages";
import { forgetLeavers } from "./company-forgets";
import type { Deps } from "./deps";
import { siteColumns } from "./exposures";

/*
 * The operator's move of an older company's scan side from D1 into its object (docs/architecture.md,
 * "The Company object"; `POST /internal/company-data/move`). A company created before migration
 * 0032 is served from D1 (`companies.scans_in_object` false) until its move finishes:
 * - `copy`: its members, ~100 a chunk in person order, have their D1 scans, results, exposures
 *   (with their history) and the sites these name given to the object (`importScanSide`,
 *   idempotent, keeping D1's exposure ids; open ones are noted in `moved_exposures`, so a scanner's
 *   `removal_confirmed` of such an id still reaches the object: services/scans.ts);
 * - the flip: `scans_in_object` becomes true (from here the object serves the company), then
 *   `recopy`: the same copy again, catching what D1 changed between a member's chunk and the flip;
 * - `clean`: D1's rows of its members who have no company still served from D1 are deleted (a
 *   person who still belongs to one keeps them).
 * Each stage is recorded (`company_scan_moves`), so a move started again resumes it; every step
 * is idempotent, a company deleted meanwhile is skipped, and once no company is left a run sends
 * nothing. One company at a time, then the next still served from D1.
 */

/** Members per chunk: one D1 batch of five reads and one object call (or one batch of deletes). */
export const MOVE_MEMBERS_CHUNK = 100;

type MoveMessage = Extract<BackgroundMessage, { kind: "move-company-scans" }>;
type Stage = MoveMessage["stage"];

/** The stage after each, once its last chunk is done (null: the company's move is finished). */
const AFTER: Record<Stage, Stage | null> = { copy: "recopy", recopy: "clean", clean: null };

/**
 * The move to run first after company `after`: a company whose move is under way (at its stage),
 * or the next one still served from D1; null when none is left.
 */
async function nextMove({ db }: Deps, after: number): Promise<MoveMessage | null> {
  const [row] = await db.all<{ id: number; stage: Stage }>(
    sql`select id, stage from (
          select company_id as id, stage, 0 as under_way from ${companyScanMoves} where company_id > ${after}
          union all
          select id, 'copy', 1 from ${companies} where scans_in_object = 0 and id > ${after})
        order by id, under_way limit 1`,
  );
  return row ? { kind: "move-company-scans", companyId: row.id, stage: row.stage, afterPerson: 0 } : null;
}

/** Starts the chain of the scan-side moves (a run started again resumes). Returns whether any was left. */
export async function startCompanyScanMoves(deps: Deps): Promise<boolean> {
  const first = await nextMove(deps, 0);
  if (first) await deps.backgroundQueue.send(first);
  return first !== null;
}

/** Companies whose scan side still has rows in D1 to move or delete (0: every company moved). */
export async function scanSideInD1({ db }: Deps): Promise<number> {
  const [row] = await db.all<{ n: number }>(
    sql`select count(*) as n from ${companies} c
        where c.scans_in_object = 0 or exists (select 1 from ${companyScanMoves} m where m.company_id = c.id)`,
  );
  return row?.n ?? 0;
}

/**
 * The stage the company's move is in: its recorded stage, or `copy` for a company still served
 * from D1 (recorded now); `moved` when its move is finished, null when it is gone.
 */
async function stageOf({ db }: Deps, companyId: number): Promise<Stage | "moved" | null> {
  const [row] = await db.all<{ inObject: number; stage: Stage | null }>(
    sql`select c.scans_in_object as inObject, m.stage from ${companies} c
        left join ${companyScanMoves} m on m.company_id = c.id where c.id = ${companyId}`,
  );
  if (!row) return null;
  if (row.stage) return row.stage;
  if (row.inObject) return "moved";
  await db.insert(companyScanMoves).values({ companyId, stage: "copy" }).onConflictDoNothing();
  return "copy";
}

/**
 * One chunk of a company's move (the `move-company-scans` message). A message of a stage the
 * company is no longer in (a chain started twice) goes on from the recorded stage.
 */
export async function moveCompanyScansChunk(deps: Deps, message: MoveMessage): Promise<Chunk> {
  const { companyId } = message;
  const stage = await stageOf(deps, companyId);
  if (stage === null || stage === "moved") {
    // A chain behind another (the move started again while under way): its last chunk's copy may have
    // landed after the other chain finished the move, marking the move under way again in the object.
    if (stage === "moved") await deps.companyObjects.of(companyId).moveFinished();
    return { done: { companyId, skipped: true }, ...(await continueWith(deps, companyId)) };
  }
  const afterPerson = stage === message.stage ? message.afterPerson : 0;
  const members = await membersAfter(deps, companyId, afterPerson);
  const done =
    stage === "clean"
      ? { cleaned: await cleanD1(deps, members) }
      : { copied: await copyToObject(deps, companyId, members) };
  if (members.length === MOVE_MEMBERS_CHUNK)
    return { done: { companyId, stage, ...done }, next: { ...message, stage, afterPerson: members.at(-1)! } };
  await finishStage(deps, companyId, stage);
  const next = AFTER[stage];
  if (next) return { done: { companyId, stage, ...done }, next: { ...message, stage: next, afterPerson: 0 } };
  return { done: { companyId, stage, ...done, finished: true }, ...(await continueWith(deps, companyId)) };
}

/** The message of the next company's move, if any. */
async function continueWith(deps: Deps, companyId: number): Promise<{ next?: MoveMessage }> {
  const next = await nextMove(deps, companyId);
  return next ? { next } : {};
}

/**
 * A stage's last chunk is done: after `copy` the company is flipped to its object (with the stage,
 * one batch); after `recopy` the object forgets people no longer members and is told the move has
 * finished; after `clean` it is told again, and the move's record goes.
 */
async function finishStage(deps: Deps, companyId: number, stage: Stage) {
  const { db } = deps;
  const next = AFTER[stage];
  if (stage === "recopy") await forgetFormerMembers(deps, companyId);
  // From here the object's removal step takes the exposures it was given too; told again at the end of
  // `clean`, after which no copy of this chain lands (another chain's late one: `moveCompanyScansChunk`).
  if (stage !== "copy") await deps.companyObjects.of(companyId).moveFinished();
  const record = eq(companyScanMoves.companyId, companyId);
  if (next === null) await db.delete(companyScanMoves).where(record);
  else if (stage === "copy")
    await db.batch([
      db.update(companies).set({ scansInObject: true }).where(eq(companies.id, companyId)),
      db.update(companyScanMoves).set({ stage: next }).where(record),
    ]);
  else await db.update(companyScanMoves).set({ stage: next }).where(record);
}

/**
 * People whose rows the object was given but who are no longer members: a membership that ended
 * before the flip wrote no `company_forgets` (the company was served from D1), so the move
 * forgets them itself; nothing it copied outlives the membership. Returns how many.
 */
async function forgetFormerMembers(deps: Deps, companyId: number): Promise<number> {
  const object = deps.companyObjects.of(companyId);
  const held = await object.heldPeople();
  if (held.length === 0) return 0;
  const members = await deps.db
    .select({ personId: memberships.personId })
    .from(memberships)
    .where(and(eq(memberships.companyId, companyId), inList(memberships.personId, held)));
  const stay = new Set(members.map((row) => row.personId));
  const gone = held.filter((personId) => !stay.has(personId));
  if (gone.length > 0) await object.forgetPeople(gone, new Date());
  return gone.length;
}

/** The company's members after `afterPerson`, in person order, a chunk of them. */
async function membersAfter({ db }: Deps, companyId: number, afterPerson: number): Promise<number[]> {
  const rows = await db
    .select({ personId: memberships.personId })
    .from(memberships)
    .where(and(eq(memberships.companyId, companyId), gt(memberships.personId, afterPerson)))
    .orderBy(asc(memberships.personId))
    .limit(MOVE_MEMBERS_CHUNK);
  return rows.map((row) => row.personId);
}

/**
 * Gives the members' D1 scan side to the company's object, then notes the open exposures among it
 * (`moved_exposures`). Returns how many exposures were given.
 */
async function copyToObject(deps: Deps, companyId: number, members: number[]): Promise<number> {
  if (members.length === 0) return 0;
  const chunk = await readScanSide(deps, members);
  await deps.companyObjects.of(companyId).importScanSide(companyId, chunk);
  // After the flip, a member removed since the chunk was read (a second chain's late chunk too) goes again.
  await forgetLeavers(deps, companyId, members);
  const open = chunk.exposures.filter((row) => row.status !== "closed").map((row) => row.id);
  if (open.length > 0)
    await deps.db.run(
      sql`insert into ${movedExposures} (exposure_id, company_id)
          select value, ${companyId} from json_each(${JSON.stringify(open)}) where true
          on conflict do nothing`,
    );
  return chunk.exposures.length;
}

/** The people's scans, results, exposures with their history, and the sites these name, from D1 (one batch). */
async function readScanSide({ db }: Deps, personIds: number[]): Promise<ScanSideChunk> {
  const theirExposures = db.select({ id: exposures.id }).from(exposures).where(inList(exposures.personId, personIds));
  const named = sql`select site_id from ${exposures} where ${inList(exposures.personId, personIds)}
    union select site_id from ${scanResults} where ${inList(scanResults.personId, personIds)}`;
  const [scanRows, resultRows, exposureRows, historyRows, sites] = await db.batch([
    db.select().from(scans).where(inList(scans.personId, personIds)),
    db.select().from(scanResults).where(inList(scanResults.personId, personIds)).orderBy(asc(scanResults.id)),
    db.select().from(exposures).where(inList(exposures.personId, personIds)).orderBy(asc(exposures.id)),
    db
      .select({
        exposureId: exposureHistory.exposureId,
        siteId: exposureHistory.siteId,
        event: exposureHistory.event,
        createdAt: exposureHistory.createdAt,
      })
      .from(exposureHistory)
      .where(inArray(exposureHistory.exposureId, theirExposures))
      .orderBy(asc(exposureHistory.id)),
    db
      .select(siteColumns)
      .from(companies)
      .where(sql`${companies.id} in (${named})`),
  ]);
  return {
    scans: scanRows,
    results: resultRows.map(({ id: _id, data, ...row }) => ({
      ...row,
      data: data === null ? null : JSON.stringify(data),
    })),
    exposures: exposureRows.map((row) => ({ ...row, data: JSON.stringify(row.data) })),
    history: historyRows,
    sites,
  };
}

/**
 * Deletes D1's scan side of the members who have no company still served from D1 (one batch; the
 * triggers drop their `company_exposures` rows). Returns how many people's rows went.
 */
async function cleanD1({ db }: Deps, members: number[]): Promise<number> {
  if (members.length === 0) return 0;
  const stillInD1 = await db
    .selectDistinct({ personId: memberships.personId })
    .from(memberships)
    .innerJoin(companies, eq(companies.id, memberships.companyId))
    .where(and(inList(memberships.personId, members), eq(companies.scansInObject, false)));
  const keep = new Set(stillInD1.map((row) => row.personId));
  const leaving = members.filter((personId) => !keep.has(personId));
  if (leaving.length === 0) return 0;
  const theirExposures = db.select({ id: exposures.id }).from(exposures).where(inList(exposures.personId, leaving));
  await db.batch([
    db.delete(exposureHistory).where(inArray(exposureHistory.exposureId, theirExposures)),
    db.delete(exposures).where(inList(exposures.personId, leaving)),
    db.delete(scanResults).where(inList(scanResults.personId, leaving)),
    db.delete(scans).where(inList(scans.personId, leaving)),
  ]);
  return leaving.length;
}
