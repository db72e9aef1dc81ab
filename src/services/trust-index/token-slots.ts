import { sql } from "drizzle-orm";
import type { Db } from "../../db/client";
import { accessTokens, indexWritten } from "../../db/schema";
import { KEY_WRITE_GAP_MS, writeDueKeys } from "../../db/kv-writes";
import type { Deps } from "../deps";
import { makeCurrent } from "./current";
import { markStale } from "./stale";
import { tokenKey, type TokenRecord, type TokenRow } from "../token-records";

/*
 * A token's `tok:` record outside the index work's claim (docs/architecture.md, "Tokens"): the
 * slot a verification that read D1 takes, and its put. The rest of the index is in
 * services/trust-index/.
 */

/** `index_written`'s digest of a `tok:` key whose fill took its slot: unknown (a token's record is always put). */
const UNKNOWN_DIGEST = "?";

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
export async function settleTokenRecords(deps: Deps, hashes: string[], now: Date) {
  const keys = hashes.map(tokenKey);
  await deps.db.batch([markStale(deps.db, keys, now)]);
  await makeCurrent(deps, { keys, now, force: true, waitDeferred: true });
}
