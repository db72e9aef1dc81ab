import { sql } from "drizzle-orm";
import type { Db } from "../db/client";
import { accessTokens, indexWork, indexWritten } from "../db/schema";
import { factsOf } from "../db/facts";
import { KEY_WRITE_GAP_MS, writeDueKeys, type DueKey } from "../db/kv-writes";
import { pruneOlderThan } from "../db/prune";
import { backoffSql, batchableAll, inList } from "../db/sql";
import { WRITTEN_TRUSTED_MS } from "../domain/trust-records";
import { logError } from "../lib/log";
import { computeRecords, EMPTY_NUMBER } from "./number-records";
import { computeCompanyRecords } from "./company-records";
import type { Deps } from "./deps";
import type { PersonObjects } from "./person-objects";
import { computeTokenRecords, tokenKey, type TokenRecord, type TokenRow } from "./token-records";
import { workForKeys } from "./index-work";

export type IndexDeps = Pick<Deps, "db" | "kv" | "objects">;
/** What applying needs: `objects` only for `prs:` keys (a token's or a number's work tells no object). */
type ApplyDeps = Pick<Deps, "db" | "kv"> & Partial<Pick<Deps, "objects">>;

/** One applier per key at a time; longer than any apply takes. */
const LEASE_MS = 30_000;
/** `index_written`'s digest of a deleted key (the column holds no null). */
const DELETED = "";
/** `index_written`'s digest of a `tok:` key whose fill took its slot: unknown (a token's record is always put). */
const UNKNOWN_DIGEST = "?";

/**
 * `applied`: keys done (put, or `unchanged`: KV already holds that value);
 * `deferred`: keys written less than a second ago, due again once that second
 * has passed; `busy`: keys another applier holds right now (it may have read
 * D1 before the latest write).
 */
export type ApplyResult = {
  applied: string[];
  unchanged: string[];
  failed: string[];
  deferred: string[];
  busy: string[];
};

/**
 * Applies index work: claims the keys (a lease, so one applier per key),
 * reads their records from D1 *after* claiming, writes them through the one
 * writer of due keys (db/kv-writes.ts) — it skips a value KV already holds
 * (`index_written`'s digest; `force`: put all, for keys KV lacks) and holds
 * back a key written less than a second ago (its row stays due until then) —,
 * tells each `prs:` person's object D1's facts about them, and deletes each
 * row only if no write bumped its version meanwhile (else it stays due and is
 * applied again). A refused KV write or an object that did not answer leaves
 * the row due after a backoff: it is retried, never papered over with a
 * delete. A `rcv:`/`rcvn:` row left by an older version is done at once:
 * those keys are the objects' now.
 *
 * `keys`: those keys (after a commit); else the oldest due rows, at most
 * `limit` (the sweep). `waitDeferred`: a key held back is waited for (at
 * most a second) and applied again before answering. Cost in D1: 1 claim; in one round, for `num:` keys
 * a read batch (3 reads), the last digests and write times of the `num:`,
 * `tok:` and `co:` keys, for `tok:` keys 1 read, for `co:` keys (the
 * heartbeat's company records) 1 read, for `prs:` keys the people's facts
 * (2 reads, then one RPC per object); 1 write batch (4 statements) — at most
 * 13 statements. At most one KV put per key, so `limit` bounds the KV
 * operations and the object calls.
 */
export async function applyIndexWork(
  { db, kv, objects }: ApplyDeps,
  {
    keys,
    now = new Date(),
    limit = 200,
    force = false,
    waitDeferred = false,
  }: { keys?: string[]; now?: Date; limit?: number; force?: boolean; waitDeferred?: boolean },
): Promise<ApplyResult> {
  const none: ApplyResult = { applied: [], unchanged: [], failed: [], deferred: [], busy: [] };
  if (keys && keys.length === 0) return none;
  const lease = crypto.randomUUID();
  const t = now.getTime();
  const chosen = keys
    ? sql`select key from ${indexWork} where ${inList(indexWork.key, keys)}`
    : sql`select key from ${indexWork} where due_at <= ${t} order by due_at limit ${limit}`;
  const claimed = await db.all<{ key: string; version: number; attempts: number }>(sql`
    update ${indexWork} set lease_id = ${lease}, lease_until = ${t + LEASE_MS}, attempts = attempts + 1
    where key in (${chosen}) and (lease_until is null or lease_until < ${t})
    returning key, version, attempts`);
  const busyOf = (claimedKeys: string[]) => (keys ?? []).filter((key) => !claimedKeys.includes(key));
  if (claimed.length === 0) return { ...none, busy: busyOf([]) };

  const claimedKeys = claimed.map((row) => row.key);
  const people = claimedKeys.filter((key) => key.startsWith("prs:")).map((key) => Number(key.slice(4)));
  // `num:` keys: who calls from a number; `tok:` keys: token verification records (services/token-records.ts).
  const numberKeys = claimedKeys.filter((key) => key.startsWith("num:"));
  const tokenKeys = claimedKeys.filter((key) => key.startsWith("tok:"));
  // `co:` keys: the heartbeat's company records (domain/company-records.ts).
  const companyKeys = claimedKeys.filter((key) => key.startsWith("co:"));
  const kvKeys = [...numberKeys, ...tokenKeys, ...companyKeys];
  const [records, written, told, tokens, companyRecords] = await Promise.all([
    computeRecords(db, numberKeys),
    kvKeys.length === 0
      ? []
      : db
          .select({ key: indexWritten.key, digest: indexWritten.digest, writtenAt: indexWritten.writtenAt })
          .from(indexWritten)
          .where(inList(indexWritten.key, kvKeys))
          .all(),
    people.length > 0 ? tellObjects(db, objects, people) : new Set<number>(),
    computeTokenRecords(db, tokenKeys, now),
    computeCompanyRecords(db, companyKeys),
  ]);
  const last = new Map(written.map((row) => [row.key, row]));
  const due: DueKey[] = claimed.flatMap((row) => {
    const token = tokens.get(row.key);
    const record = records.get(row.key);
    // null: the company is gone, and its record with it.
    const company = companyRecords.get(row.key);
    // A `prs:` key (told above), or a receiver or bucket key of an older version (its person's object owns it now).
    if (token === undefined && record === undefined && company === undefined) return [];
    const before = last.get(row.key);
    return [
      {
        key: row.key,
        // Nobody calls from the number any more: the key goes (absent reads as "nobody").
        value: token ?? (company !== undefined ? company : record === EMPTY_NUMBER ? null : record!),
        // No digest on record: KV may hold anything, so even a delete is written.
        digest: before === undefined ? "?" : before.digest === DELETED ? null : before.digest,
        writtenAt: before?.writtenAt.getTime() ?? null,
        // A token record is always put: the token's own checks may have put another value directly.
        force: force || token !== undefined,
        refusals: row.attempts - 1,
      },
    ];
  });
  const writes = new Map((await writeDueKeys(kv, due, t)).map((write) => [write.key, write]));
  const outcomes = claimed.map((row) => {
    const write = writes.get(row.key);
    const ok = write
      ? write.outcome === "written" || write.outcome === "unchanged"
      : !row.key.startsWith("prs:") || told.has(Number(row.key.slice(4)));
    return { ...row, write, ok };
  });
  const applied = outcomes.filter((row) => row.ok);
  const later = outcomes.filter((row) => !row.ok);
  const failed = later.filter((row) => row.write?.outcome !== "deferred").map((row) => row.key);
  const deferred = later.filter((row) => row.write?.outcome === "deferred").map((row) => row.key);
  const put = [...writes.values()].filter((write) => write.outcome === "written");
  await db.batch([
    // What KV now holds and when it was written, recorded while the lease is still ours (a late applier records nothing).
    batchableAll(
      db,
      sql`
      insert into ${indexWritten} (key, digest, written_at)
      select json_extract(j.value, '$[0]'), json_extract(j.value, '$[1]'), json_extract(j.value, '$[2]')
      from json_each(${JSON.stringify(put.map((write) => [write.key, write.digest ?? DELETED, write.at]))}) j
      where exists (select 1 from ${indexWork} w where w.key = json_extract(j.value, '$[0]') and w.lease_id = ${lease})
      on conflict (key) do update set digest = excluded.digest, written_at = excluded.written_at`,
    ),
    batchableAll(
      db,
      sql`
      delete from ${indexWork} where lease_id = ${lease} and exists (
        select 1 from json_each(${JSON.stringify(applied.map((row) => [row.key, row.version]))}) j
        where json_extract(j.value, '$[0]') = index_work.key and json_extract(j.value, '$[1]') = index_work.version)`,
    ),
    // Refused: due again after the writer's backoff (an object that did not answer: 1 s, 2 s … at most 60 s);
    // deferred: once its second has passed, not counted as an attempt.
    batchableAll(
      db,
      sql`
      update ${indexWork} set
        due_at = coalesce((select json_extract(j.value, '$[1]') from json_each(${JSON.stringify(
          later.map((row) => [row.key, row.write?.at ?? null]),
        )}) j where json_extract(j.value, '$[0]') = index_work.key), ${t} + ${backoffSql(sql`attempts - 1`, { base: 1000, cap: 60_000 })}),
        attempts = attempts - ${sql`(key in (select value from json_each(${JSON.stringify(deferred)})))`}
      where lease_id = ${lease} and ${inList(indexWork.key, [...failed, ...deferred])}`,
    ),
    batchableAll(db, sql`update ${indexWork} set lease_id = null, lease_until = null where lease_id = ${lease}`),
  ]);
  const result = {
    applied: applied.map((row) => row.key),
    unchanged: applied.filter((row) => row.write?.outcome !== "written").map((row) => row.key),
    failed,
    deferred,
    busy: busyOf(claimedKeys),
  };
  if (!waitDeferred || deferred.length === 0) return result;
  // `waitDeferred` (a fill, the rebuild: nothing else retries them soon): the second is waited out here.
  const until = Math.max(...later.filter((row) => row.write?.outcome === "deferred").map((row) => row.write!.at));
  await scheduler.wait(Math.max(0, until - Date.now()));
  const again = await applyIndexWork({ db, kv, objects }, { keys: deferred, force });
  return {
    applied: [...result.applied, ...again.applied],
    unchanged: [...result.unchanged, ...again.unchanged],
    failed: [...failed, ...again.failed],
    deferred: again.deferred,
    busy: [...result.busy, ...again.busy],
  };
}

/** Tells these people's objects D1's facts about them; answers those that took them (a failure is logged). */
async function tellObjects(db: Db, objects: PersonObjects | undefined, personIds: number[]): Promise<Set<number>> {
  if (!objects) throw new Error("index work for people needs their objects");
  const told = new Set<number>();
  await Promise.all(
    (await factsOf(db, personIds)).map(async (facts) => {
      try {
        await objects.of(facts.personId).takeFacts(facts);
        told.add(facts.personId);
      } catch (err) {
        logError("telling a person's object its facts failed; retried later", err, { personId: facts.personId });
      }
    }),
  );
  return told;
}

/**
 * A retention rule (daily): digests older than the record's TTL say nothing
 * any more (KV no longer holds that value), so they go.
 */
export const pruneIndexWritten = (db: Db, now: Date, { maxStatements }: { maxStatements: number }) =>
  pruneOlderThan(db, {
    table: indexWritten,
    column: indexWritten.writtenAt,
    cutoff: new Date(now.getTime() - WRITTEN_TRUSTED_MS),
    maxStatements,
  });

/**
 * A token's verification record (`tok:`, docs/architecture.md "Tokens") filled by the check that
 * read D1, in one statement: the fill takes the key's write slot in `index_written` (the index
 * work's record of what KV holds and when it was written; taken only when the key was last written
 * a second ago or more) and reads the token in the same statement, so D1 holds the token as it
 * was when the slot was taken. An applier of index work for the key (a revocation's) reads that
 * slot after its own claim and waits the second out before its put (db/kv-writes.ts `deferred`),
 * so a valid record read before a revocation can never land after the revocation's refused one,
 * and no correction follows a put (KV's one write a second per key is never asked twice).
 * Unknown tokens take no slot and get no record (they would fill KV). `reserved: false`: the key
 * was written less than a second ago; the caller puts nothing, unless the token is refused, which
 * then goes through the index work (`settleTokenRecords`).
 */
export async function reserveTokenRecord(
  db: Db,
  hash: string,
  now: Date,
): Promise<{ row: (TokenRow & { lastUsedAt: Date | null }) | undefined; reserved: boolean }> {
  const t = now.getTime();
  const free = sql`${indexWritten.writtenAt} <= ${t - KEY_WRITE_GAP_MS}`;
  const [found] = await db.all<{ reserved: number; token: string | null }>(sql`
    insert into ${indexWritten} (key, digest, written_at)
    select ${tokenKey(hash)}, ${UNKNOWN_DIGEST}, ${t} from ${accessTokens} where ${accessTokens.tokenHash} = ${hash}
    on conflict (key) do update set
      digest = case when ${free} then excluded.digest else digest end,
      written_at = case when ${free} then excluded.written_at else written_at end
    returning written_at = ${t} as reserved, (select json_object('id', id, 'person_id', person_id,
      'service_name', service_name, 'scopes', json(scopes), 'expires_at', expires_at, 'revoked_at', revoked_at,
      'last_used_at', last_used_at, 'signing', json(signing))
      from ${accessTokens} where ${accessTokens.tokenHash} = ${hash}) as token`);
  if (!found?.token) return { row: undefined, reserved: false };
  const raw = JSON.parse(found.token) as {
    id: number;
    person_id: number | null;
    service_name: string | null;
    scopes: string[] | null;
    expires_at: number | null;
    revoked_at: number | null;
    last_used_at: number | null;
    signing: TokenRow["signing"];
  };
  const date = (ms: number | null) => (ms === null ? null : new Date(ms));
  return {
    reserved: found.reserved === 1,
    row: {
      id: raw.id,
      personId: raw.person_id,
      serviceName: raw.service_name,
      scopes: raw.scopes ?? [],
      expiresAt: date(raw.expires_at),
      revokedAt: date(raw.revoked_at),
      lastUsedAt: date(raw.last_used_at),
      signing: raw.signing ?? null,
    },
  };
}

/** Puts a token's record after its slot was taken (`reserveTokenRecord`), through the one writer of keys. */
export async function putReservedToken(kv: KVNamespace, hash: string, record: TokenRecord): Promise<void> {
  // The slot was taken: no digest or write time holds the put back (a refusal is logged by the writer).
  await writeDueKeys(kv, [
    { key: tokenKey(hash), value: JSON.stringify(record), digest: null, writtenAt: null, force: true },
  ]);
}

/**
 * Rewrites these tokens' records from D1 through the index work (recorded, then applied with force,
 * a key written less than a second ago once that second has passed): a token found refused whose
 * key was just written, the write guard's refusal, a provider token's new signing configuration.
 */
export async function settleTokenRecords(deps: ApplyDeps, hashes: string[], now: Date) {
  const keys = hashes.map(tokenKey);
  await deps.db.batch([workForKeys(deps.db, keys, now)]);
  await applyIndexWork(deps, { keys, now, force: true, waitDeferred: true });
}
