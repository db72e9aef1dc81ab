// `npm run token -- <command>`: mint, revoke and list access tokens
// (docs/decisions.md). Works on the local D1 by default, `--remote` on production.
// A minted token is printed once, on stdout; only its SHA-256 is stored.
import { createHash, randomBytes } from "node:crypto";
import { d1, fail, noMorePositionals, parseArgs, sqlString } from "./lib/cli.mjs";

const SCOPES = ["calls:lookup", "scans:write", "platform:admin"];
/** The longest life `--expires` gives a token: ten years. */
const MAX_EXPIRES_DAYS = 3650;
const USAGE = `Usage:
  npm run token -- mint --person <id> [--expires <days>] [--remote]
  npm run token -- mint --service <name> --scope <scope> [--scope <scope>] [--expires <days>] [--remote]
  npm run token -- revoke <token> [--remote] [--api <url>] [--admin-token <operator token>]
  npm run token -- revoke --id <token id> [--remote] [--api <url>] [--admin-token <operator token>]
  npm run token -- list [--remote]

Scopes: ${SCOPES.join(", ")}. --expires: 1 to ${MAX_EXPIRES_DAYS} days (none: no expiry).
Tokens go to the local database unless --remote is given.
revoke goes through the API (default http://127.0.0.1:8787) with an operator token ($ADMIN_TOKEN or
--admin-token), so the token's open streams close at once; without one it revokes in D1 directly.`;

const { flags, positionals } = parseArgs(process.argv.slice(2), {
  switches: ["remote", "help"],
  options: ["id", "api", "admin-token", "expires", "person", "service", "scope"],
});
const remote = flags.remote === true;
const [command, ...rest] = positionals;
const now = Date.now();
const hash = (token) => createHash("sha256").update(token).digest("hex");

if (flags.help || !command) {
  console.error(USAGE);
  process.exit(command || flags.help ? 0 : 1);
}

// The positionals each command reads (after its name): a stray one is an error, not ignored.
const ARGUMENTS = { mint: 0, revoke: flags.id === undefined ? 1 : 0, list: 0 };
if (command in ARGUMENTS) noMorePositionals(command, rest, ARGUMENTS[command], USAGE);

switch (command) {
  case "mint":
    mint();
    break;
  case "revoke":
    await revoke();
    break;
  case "list":
    list();
    break;
  default:
    fail(`unknown command "${command}".\n\n${USAGE}`);
}

function mint() {
  const expiresAt = flags.expires === undefined ? null : now + expiresDays() * 86_400_000;
  let token;
  let owner;
  if (flags.person !== undefined) {
    const personId = positiveInt(flags.person, "--person");
    const [people] = d1(`SELECT id, first_name, last_name FROM people WHERE id = ${personId}`, { remote });
    if (!people.length) fail(`there is no person ${personId}.`);
    token = `pk_${randomBytes(32).toString("base64url")}`;
    owner = { person_id: personId, service_name: null, scopes: [] };
    console.error(`Minting a person token for ${people[0].first_name} ${people[0].last_name} (person ${personId}).`);
  } else if (flags.service !== undefined) {
    const name = String(flags.service);
    if (!/^[a-z][a-z0-9-]{1,39}$/.test(name)) fail("--service must be 2–40 lowercase letters, digits or dashes.");
    const scopes = [flags.scope ?? []].flat();
    if (!scopes.length) fail(`a service token needs at least one --scope (${SCOPES.join(", ")}).`);
    const unknown = scopes.filter((scope) => !SCOPES.includes(scope));
    if (unknown.length) fail(`unknown scope ${unknown.join(", ")}; valid: ${SCOPES.join(", ")}.`);
    token = `sk_${randomBytes(32).toString("base64url")}`;
    owner = { person_id: null, service_name: name, scopes };
    console.error(`Minting a service token for "${name}" with scopes ${scopes.join(", ")}.`);
  } else {
    fail(`mint needs --person <id> or --service <name>.\n\n${USAGE}`);
  }
  const [inserted] = d1(
    `INSERT INTO access_tokens (token_hash, prefix, person_id, service_name, scopes, expires_at, created_at) VALUES (` +
      [
        sqlString(hash(token)),
        sqlString(token.slice(0, 8)),
        owner.person_id ?? "NULL",
        owner.service_name === null ? "NULL" : sqlString(owner.service_name),
        sqlString(JSON.stringify(owner.scopes)),
        expiresAt ?? "NULL",
        now,
      ].join(", ") +
      ") RETURNING id",
    { remote },
  );
  console.error(
    `Stored in the ${remote ? "remote" : "local"} database as token ${inserted[0].id}${expiresAt ? `, expires ${new Date(expiresAt).toISOString()}` : ", no expiry"}. It is shown only now:`,
  );
  console.log(token);
}

/**
 * Revokes a token through the API (POST /internal/tokens/{id}/revoke), so a person's open streams of it
 * close at once and every record of it is rewritten. Needs an operator token (--admin-token or
 * $ADMIN_TOKEN) and the server (--api, default the local one). Without them it revokes in D1 directly,
 * and says what that cannot do.
 */
async function revoke() {
  const where =
    flags.id !== undefined
      ? `id = ${positiveInt(flags.id, "--id")}`
      : rest[0]
        ? `token_hash = ${sqlString(hash(rest[0]))}`
        : fail(`revoke needs a token or --id <token id>.\n\n${USAGE}`);
  const [found] = d1(`SELECT id, prefix FROM access_tokens WHERE ${where} AND revoked_at IS NULL`, { remote });
  if (!found.length) fail("no active token matched; nothing was revoked.");
  const { id, prefix } = found[0];
  const admin = flags["admin-token"] ?? process.env.ADMIN_TOKEN;
  const api = String(flags.api ?? "http://127.0.0.1:8787").replace(/\/+$/, "");
  if (admin) {
    let response;
    try {
      response = await fetch(`${api}/internal/tokens/${id}/revoke`, {
        method: "POST",
        headers: { Authorization: `Bearer ${admin}` },
      });
    } catch (err) {
      console.error(`Could not reach ${api} (${err.cause?.code ?? err.message}); revoking in D1 directly instead.`);
    }
    if (response?.status === 204) {
      console.error(`Revoked token ${id} (${prefix}…) through ${api}: its open streams are closed, requests refused.`);
      return;
    }
    if (response) fail(`${api} answered ${response.status}: ${(await response.text()).slice(0, 300)}`);
  } else {
    console.error("No operator token (--admin-token or ADMIN_TOKEN): revoking in D1 directly.");
  }
  revokeInD1(where);
}

/**
 * The revocation and the index work that rewrites the token's KV record as refused, in one command; with
 * it the container sessions the token minted (`parent_token_id`, docs/consent.md) and their records, as
 * the API's revocation does (src/services/devices.ts, revokeDevice).
 * The record is written by the Worker's one writer of KV keys (its minute sweep applies the work;
 * docs/architecture.md, "Tokens"), never by this script: a put of its own could race the Worker's.
 */
function revokeInD1(where) {
  const revokedNow = `SELECT id FROM access_tokens WHERE ${where} AND revoked_at = ${now}`;
  const [rows, sessions] = d1(
    `UPDATE access_tokens SET revoked_at = ${now} WHERE ${where} AND revoked_at IS NULL RETURNING id, prefix, token_hash;
     UPDATE access_tokens SET revoked_at = ${now} WHERE parent_token_id IN (${revokedNow}) AND revoked_at IS NULL
       RETURNING id;
     INSERT INTO index_work (key, version, attempts, due_at, created_at)
       SELECT 'tok:' || token_hash, 1, 0, ${now}, ${now} FROM access_tokens
       WHERE (${where} OR parent_token_id IN (${revokedNow})) AND revoked_at = ${now}
       ON CONFLICT (key) DO UPDATE SET version = version + 1, due_at = excluded.due_at`,
    { remote },
  );
  if (!rows.length) fail("no active token matched; nothing was revoked.");
  const minted = sessions.length
    ? ` with the ${sessions.length} container session${sessions.length === 1 ? "" : "s"} it minted`
    : "";
  console.error(
    `Revoked token ${rows[0].id} (${rows[0].prefix}…)${minted} in D1. The Worker's minute sweep rewrites ` +
      `${minted ? "their" : "its"} KV records as refused; requests are then refused everywhere within 60 s more. ` +
      "Its open streams stay open until they reconnect: revoke through the API (ADMIN_TOKEN) to close them at once.",
  );
}

function list() {
  const [rows] = d1(
    "SELECT id, prefix, person_id, service_name, scopes, expires_at, revoked_at, last_used_at, " +
      "json_extract(signing, '$.kind') AS signing FROM access_tokens ORDER BY id",
    { remote },
  );
  // A date JavaScript cannot represent (a row written out of range, e.g. by an older mint) is shown as its
  // milliseconds rather than ending the listing.
  const iso = (ms) => {
    if (ms === null) return "";
    const date = new Date(ms);
    return Number.isNaN(date.getTime()) ? `${ms} ms (out of range)` : date.toISOString();
  };
  console.table(
    rows.map((row) => ({
      id: row.id,
      prefix: `${row.prefix}…`,
      owner: row.person_id !== null ? `person ${row.person_id}` : `service ${row.service_name} ${row.scopes}`,
      expires: iso(row.expires_at),
      revoked: iso(row.revoked_at),
      last_used: iso(row.last_used_at),
      // Whose signatures a provider token requires (npm run admin -- provider-signing); never the secret.
      signed_by: row.signing ?? "",
    })),
  );
}

/** `--expires`, checked before anything is written: 1 to MAX_EXPIRES_DAYS days. */
function expiresDays() {
  const days = positiveInt(flags.expires, "--expires");
  if (days > MAX_EXPIRES_DAYS)
    fail(`--expires is at most ${MAX_EXPIRES_DAYS} days (ten years); got ${days}. Nothing was minted.`, 2);
  return days;
}

function positiveInt(value, name) {
  if (!/^[0-9]+$/.test(String(value)) || Number(value) < 1) fail(`${name} must be a positive integer.`);
  return Number(value);
}
