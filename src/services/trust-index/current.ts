import { sql } from "drizzle-orm";
import type { Db } from "../../db/client";
import { indexWork, indexWritten } from "../../db/schema";
import { factsOf } from "../../db/facts";
import { writeDueKeys, type DueKey } from "../../db/kv-writes";
import { pruneOlderThan } from "../../db/prune";
import { backoffSql, batchableAll, inList } from "../../db/sql";
import { D1_KINDS, KEY_KINDS, KEY_RETRY, KEY_WRITE_GAP_MS, keysOfKind } from "../../domain/key-kinds";
import { WRITTEN_TRUSTED_MS } from "../../domain/trust-records";
import { backoff } from "../../lib/backoff";
import { logError } from "../../lib/log";
import type { Deps } from "../deps";
import { D1_VALUES } from "./kinds";

/** One applier per key at a time; longer than any apply takes. */
const LEASE_MS = 30_000;
/** `index_written`'s digest of a deleted key (the column holds no null). */
const DELETED = "";

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
 * Makes keys current (D1's side; a person's object makes its own current,
 * objects/person/index-keys.ts): claims the keys (a lease, so one applier per key),
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
 * most a second) and applied again before answering. Cost in D1: 1 claim; in one round, the last
 * digests and write times of the KV keys (1 read) and each kind's computation (./kinds.ts: `num:`
 * a batch of 3 reads, `tok:` 1, `co:` 1, `eml:` 1, `lnk:` a batch of 2; `prs:` the people's facts,
 * 2 reads, then one RPC per object); 1 write batch (4 statements) — at most 16 statements. At most one KV put per key, so `limit` bounds the KV
 * operations and the object calls.
 */
export async function makeCurrent(
  deps: Deps,
  {
    keys,
    now = new Date(),
    limit = 200,
    force = false,
    waitDeferred = false,
  }: { keys?: string[]; now?: Date; limit?: number; force?: boolean; waitDeferred?: boolean },
): Promise<ApplyResult> {
  const { db, kv } = deps;
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
  const people = keysOfKind(claimedKeys, "prs").map(KEY_KINDS.prs.parse);
  // Each kind D1 writes, computed by its entry in the registry (./kinds.ts); `rcv:`/`rcvn:` rows of an older
  // version have none (their person's object owns them now) and are done at once.
  const kvKeys = claimedKeys.filter((key) => D1_KINDS.some((name) => key.startsWith(KEY_KINDS[name].prefix)));
  const [written, told, ...computed] = await Promise.all([
    kvKeys.length === 0
      ? []
      : db
          .select({ key: indexWritten.key, digest: indexWritten.digest, writtenAt: indexWritten.writtenAt })
          .from(indexWritten)
          .where(inList(indexWritten.key, kvKeys))
          .all(),
    people.length > 0 ? tellObjects(deps, people) : new Set<number>(),
    ...D1_KINDS.map(async (name) => {
      const own = keysOfKind(kvKeys, name);
      return {
        force: D1_VALUES[name].force ?? false,
        values: own.length === 0 ? new Map() : await D1_VALUES[name].compute(db, own, now),
      };
    }),
  ]);
  const last = new Map(written.map((row) => [row.key, row]));
  const due: DueKey[] = claimed.flatMap((row) => {
    const kind = computed.find(({ values }) => values.has(row.key));
    if (kind === undefined) return [];
    const before = last.get(row.key);
    return [
      {
        key: row.key,
        value: kind.values.get(row.key) as string | null,
        // No digest on record: KV may hold anything, so even a delete is written.
        digest: before === undefined ? "?" : before.digest === DELETED ? null : before.digest,
        writtenAt: before?.writtenAt.getTime() ?? null,
        force: force || kind.force,
        refusals: row.attempts - 1,
      },
    ];
  });
  const writes = new Map((await writeDueKeys(kv, due, t)).map((write) => [write.key, write]));
  const outcomes = claimed.map((row) => {
    const write = writes.get(row.key);
    const ok = write
      ? write.outcome === "written" || write.outcome === "unchanged"
      : !row.key.startsWith(KEY_KINDS.prs.prefix) || told.has(KEY_KINDS.prs.parse(row.key));
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
        )}) j where json_extract(j.value, '$[0]') = index_work.key), ${t} + ${backoffSql(sql`attempts - 1`, KEY_RETRY)}),
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
  const again = await makeCurrent(deps, { keys: deferred, force });
  return {
    applied: [...result.applied, ...again.applied],
    unchanged: [...result.unchanged, ...again.unchanged],
    failed: [...failed, ...again.failed],
    deferred: again.deferred,
    busy: [...result.busy, ...again.busy],
  };
}

/** Tells these people's objects D1's facts about them; answers those that took them (a failure is logged). */
async function tellObjects({ db, objects }: Deps, personIds: number[]): Promise<Set<number>> {
  const told = new Set<number>();
  await Promise.all(
    (await factsOf(db, personIds)).map(async (facts) => {
      try {
        await objects.write(facts.personId, (person) => person.takeFacts(facts));
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
 * Keys a command applies inline, and per `reindex` message: one KV put each,
 * and an invocation may make 1,000 KV operations
 * (https://developers.cloudflare.com/workers/platform/limits/), so a bulk
 * write (1,000 employees' phones) hands the rest to the background queue.
 */
export const INLINE_INDEX_KEYS = 200;

/**
 * Makes a command's stale keys current right after its commit, so the next lookup already
 * answers the new way. A key another applier holds (a fill that may have
 * read D1 before this commit) is waited for briefly — leases last
 * milliseconds — and then applied from D1 as it is now (a `tok:` key written
 * less than a second ago is waited for too: a revocation lands before the
 * answer). Keys KV refused,
 * written less than a second ago (one write per key per second), or still
 * held, or past the first `INLINE_INDEX_KEYS`, go to the background
 * queue with a short delay; the minute sweep is the last resort. Never
 * throws: the change is committed and its work recorded.
 */
export async function makeCurrentAfterCommit(deps: Deps, keys: string[]) {
  const later = keys.slice(INLINE_INDEX_KEYS);
  let pending = keys.slice(0, INLINE_INDEX_KEYS);
  let failed: string[] = [];
  try {
    for (let round = 0; pending.length > 0 && round < 5; round++) {
      if (round > 0) await scheduler.wait(backoff(round, { base: 20, cap: 320 }));
      // A token's record (a revocation) written less than a second ago by its fill: that second is waited out
      // here, so the refused record lands before the command answers (docs/architecture.md, "Tokens").
      const waitDeferred = keysOfKind(pending, "tok").length > 0;
      const result = await makeCurrent(deps, { keys: pending, waitDeferred });
      // Deferred (written less than a second ago, db/kv-writes.ts): the queue's 1 s delay writes them.
      failed = [...failed, ...result.failed, ...result.deferred];
      pending = result.busy;
    }
  } catch (err) {
    logError("applying index work failed; left to the background queue and the sweep", err, { keys: keys.length });
    failed = keys;
    pending = [];
  }
  const retry = [...new Set([...failed, ...pending, ...later])];
  for (let i = 0; i < retry.length; i += INLINE_INDEX_KEYS) {
    const part = retry.slice(i, i + INLINE_INDEX_KEYS);
    await deps.backgroundQueue
      .send({ kind: "reindex", keys: part }, { delaySeconds: KEY_WRITE_GAP_MS / 1_000 })
      .catch((err: unknown) => {
        logError("enqueueing index work failed; left to the sweep", err, { keys: part.length });
      });
  }
}
