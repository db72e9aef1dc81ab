import { and, asc, eq, isNotNull, sql } from "drizzle-orm";
import { accessTokens } from "../db/schema";
import { inList } from "../db/sql";
import { sealContext, type StoredSigning } from "../domain/provider-signing";
import { forbidden } from "../lib/errors";
import type { Deps } from "./deps";
import { WriteBatch } from "./outbox";

/*
 * Twilio auth tokens at rest (docs/security.md, "Provider signatures"): D1
 * holds each sealed under `PROVIDER_SECRET_KEYS` (`deps.providerKeys`,
 * lib/secret-box.ts), bound to its token's id; the token's `tok:` record in
 * KV carries the same ciphertext, never the token. A request opens it into
 * this isolate's memory once (`twilioAuthToken`). The minute cron's
 * `provider-keys` job and the operator's rotation (`POST
 * /internal/provider-keys/rotate`, `npm run admin -- provider-keys rotate`)
 * seal again what is not sealed under the first key: the rows an older
 * version stored in clear, and after a rotation those under an older key.
 */

/** Auth tokens opened in this isolate, by token id and ciphertext (a new ciphertext is opened anew). */
const opened = new Map<string, string>();
const OPENED_MAX = 1_000;

/**
 * The Twilio auth token of provider token `tokenId`, from the sealed value
 * its principal carries (opened once per isolate and kept in memory). From
 * D1 instead (one statement) when the principal says D1 did not hold it
 * sealed yet (`sealed: null`, until the minute's job seals it), or when the
 * principal's value does not open: a rotation sealed it again meanwhile and
 * the old key left the secret before this isolate's cached verification did.
 * A missing or wrong `PROVIDER_SECRET_KEYS` is a 503 naming it.
 */
export async function twilioAuthToken(
  deps: Deps,
  tokenId: number,
  signing: { sealed: string | null },
): Promise<string> {
  if (signing.sealed !== null) {
    try {
      return await openOnce(deps, tokenId, signing.sealed);
    } catch (err) {
      const stored = await storedTwilioSigning(deps, tokenId);
      if (!("sealed" in stored) || stored.sealed === signing.sealed) throw err;
      return await openOnce(deps, tokenId, stored.sealed);
    }
  }
  const stored = await storedTwilioSigning(deps, tokenId);
  return "authToken" in stored ? stored.authToken : await openOnce(deps, tokenId, stored.sealed);
}

async function openOnce(deps: Deps, tokenId: number, sealed: string): Promise<string> {
  const key = `${tokenId} ${sealed}`;
  const known = opened.get(key);
  if (known !== undefined) return known;
  const authToken = await deps.providerKeys.open(sealed, sealContext(tokenId));
  if (opened.size >= OPENED_MAX) opened.delete(opened.keys().next().value!);
  opened.set(key, authToken);
  return authToken;
}

/** The token's Twilio configuration as D1 holds it now. */
async function storedTwilioSigning(deps: Deps, tokenId: number) {
  const row = await deps.db
    .select({ signing: accessTokens.signing })
    .from(accessTokens)
    .where(eq(accessTokens.id, tokenId))
    .get();
  const stored = row?.signing;
  // The configuration changed since the token was verified: the new one applies within 60 s.
  if (stored?.kind !== "twilio")
    throw forbidden("this token's signing configuration changed; retry once the change has reached every server");
  return stored;
}

export type Resealed = {
  /** The key everything is sealed under once done; null: `PROVIDER_SECRET_KEYS` is not set. */
  key_id: string | null;
  /** Auth tokens sealed again in this run (stored in clear, or under an older key). */
  resealed: number;
  /**
   * Auth tokens whose sealed value does not open, left as they are: those sealed under a key the
   * secret no longer lists, and those that failed to open in this run.
   */
  unopened: number;
  /** More are due than one run takes: run again. */
  remaining: boolean;
};

/** Auth tokens one run reads and seals again. */
const RESEAL_CHUNK = 100;

/**
 * Seals again, under the first key of `PROVIDER_SECRET_KEYS`, the stored
 * Twilio auth tokens that are not sealed under it: in clear (stored by an
 * older version) or under another listed key (after a rotation). A value
 * sealed under a key the secret no longer lists cannot be opened: it is
 * counted, never read again, so such rows (however many) hold up no other.
 * One round trip of two reads (the partial index of tokens with a signing
 * configuration: no scan of the tokens), then one batch writing the new
 * values, each only if the row is still as read (an operator's change
 * meanwhile wins), with the index work that rewrites the tokens' `tok:`
 * records, so a record holding a clear token is overwritten too. Without the
 * secret, nothing sealed can be read or written: when clear tokens wait, that
 * is the 503 naming it (the cron logs it every minute); otherwise there is
 * nothing to do. The minute cron's `provider-keys` job runs one chunk.
 */
export async function resealProviderSecrets(deps: Deps, now = new Date()): Promise<Resealed> {
  const { skipped: _skipped, ...run } = await resealChunk(deps, now, []);
  return run;
}

/** One chunk; `skip`: tokens that did not open earlier in this rotation (left out, counted). */
async function resealChunk(deps: Deps, now: Date, skip: number[]): Promise<Resealed & { skipped: number[] }> {
  let listed: string[] = [];
  let missing: unknown = null;
  try {
    listed = deps.providerKeys.keyIds();
  } catch (err) {
    missing = err;
  }
  const current = listed[0] ?? null;
  const sealed = sql`json_extract(${accessTokens.signing}, '$.sealed')`;
  // The key id of a sealed value `v1.<kid>.…` (lib/secret-box.ts).
  const kid = sql`substr(${sealed}, 4, instr(substr(${sealed}, 4), '.') - 1)`;
  const listedKids = sql.join(
    listed.map((id) => sql`${id}`),
    sql`, `,
  );
  const twilio = and(isNotNull(accessTokens.signing), sql`json_extract(${accessTokens.signing}, '$.kind') = 'twilio'`);
  const due =
    current === null
      ? sql`${sealed} is null`
      : sql`(${sealed} is null or (${kid} <> ${current} and ${kid} in (${listedKids})))`;
  const [rows, [unlisted]] = await deps.db.batch([
    deps.db
      .select({
        id: accessTokens.id,
        hash: accessTokens.tokenHash,
        raw: sql<string>`cast(${accessTokens.signing} as text)`,
      })
      .from(accessTokens)
      // The ids bound as one JSON value: a rotation may skip more than D1's 100 parameters.
      .where(and(twilio, due, sql`not (${inList(accessTokens.id, skip)})`))
      // Those in clear first: sealing them is what matters most.
      .orderBy(sql`${sealed} is null desc`, asc(accessTokens.id))
      .limit(RESEAL_CHUNK + 1),
    deps.db
      .select({ n: sql<number>`count(*)` })
      .from(accessTokens)
      .where(current === null ? sql`0` : and(twilio, sql`${sealed} is not null and ${kid} not in (${listedKids})`)),
  ]);
  const unopenable = (unlisted?.n ?? 0) + skip.length;
  if (rows.length === 0) return { key_id: current, resealed: 0, unopened: unopenable, remaining: false, skipped: [] };
  if (current === null) throw missing;

  const chunk = rows.slice(0, RESEAL_CHUNK);
  const batch = new WriteBatch(deps, now);
  const hashes: string[] = [];
  const skipped: number[] = [];
  for (const row of chunk) {
    const stored = JSON.parse(row.raw) as StoredSigning & { kind: "twilio" };
    let authToken: string;
    try {
      authToken =
        "authToken" in stored ? stored.authToken : await deps.providerKeys.open(stored.sealed, sealContext(row.id));
    } catch {
      skipped.push(row.id);
      continue;
    }
    const signing: StoredSigning = {
      kind: "twilio",
      sealed: await deps.providerKeys.seal(authToken, sealContext(row.id)),
    };
    batch.add(
      deps.db
        .update(accessTokens)
        .set({ signing })
        .where(and(eq(accessTokens.id, row.id), sql`cast(${accessTokens.signing} as text) = ${row.raw}`)),
    );
    hashes.push(row.hash);
  }
  batch.markStaleTokens(hashes);
  await batch.commit();
  return {
    key_id: current,
    resealed: hashes.length,
    unopened: unopenable + skipped.length,
    remaining: rows.length > RESEAL_CHUNK,
    skipped,
  };
}

/** Chunks the operator's rotation runs in one request at most (those of values that do not open cost no KV). */
const ROTATION_CHUNKS = 20;
/**
 * Auth tokens the operator's rotation seals again in one request: each rewrites its token's `tok:`
 * record in KV right after the commit, and one invocation may make 1,000 KV operations
 * (https://developers.cloudflare.com/workers/platform/limits/); `remaining` asks for another call.
 */
const ROTATION_RESEALS = 5 * RESEAL_CHUNK;

/**
 * The operator's rotation (`POST /internal/provider-keys/rotate`): chunks
 * run until nothing is due, at most `ROTATION_CHUNKS` of them sealing at most
 * `ROTATION_RESEALS` auth tokens (then `remaining` says to call again); a value that
 * did not open is left out of the chunks after it (and counted), so the
 * rotation always gets past it. 503 naming `PROVIDER_SECRET_KEYS` when it
 * is not set.
 */
export async function rotateProviderSecrets(deps: Deps, now = new Date()): Promise<Resealed> {
  const key_id = deps.providerKeys.sealingKeyId();
  const total: Resealed = { key_id, resealed: 0, unopened: 0, remaining: false };
  const skip: number[] = [];
  for (let chunk = 0; chunk < ROTATION_CHUNKS; chunk++) {
    const run = await resealChunk(deps, now, skip);
    skip.push(...run.skipped);
    total.resealed += run.resealed;
    total.unopened = run.unopened;
    total.remaining = run.remaining;
    if (!run.remaining || total.resealed >= ROTATION_RESEALS) break;
  }
  return total;
}
