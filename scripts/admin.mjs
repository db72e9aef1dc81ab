// `npm run admin -- <command>`: the platform operator's command over the
// /internal admin API (docs/decisions.md, "Operating the platform"): create
// companies of every kind, enable/disable them, seat an employer's first
// Admin, configure a publisher's consent container, keep the license catalog
// companies buy seats from. Talks HTTP to a running
// server: the local one by default, `--api <url>` for a deployed one.
// The id a command creates is printed on stdout; everything else on stderr,
// so `COMPANY=$(npm run -s admin -- create-company employer …)` works.
import { d1, fail, noMorePositionals, parseArgs } from "./lib/cli.mjs";
import { vapidKeyPair } from "./lib/vapid.mjs";

const KINDS = ["employer", "site", "publisher", "vendor"];
const USAGE = `Usage: npm run admin -- <command> [options] [--api <url>] [--token <token>]

Commands:
  status
      How far behind the background work is: per kind (trust-index rewrites, webhook history
      waiting to be enqueued, removal requests, dead letters) the items due and the oldest's age.
      The JSON of GET /internal/status on stdout, a summary on stderr.
  create-company <employer|site|publisher|vendor> --name <name> --slug <slug>
        [--url <url>] [--logo <url>]
        [--domain <host>]        publishers: the domain whose pages load the container
        [--scanner]              sites: the scanner covers it
        [--profile-url <url>]    vendors: public trust profile
      Prints the new company's id.
  update-company <company id> [--name <name>] [--url <url>] [--logo <url>] [--domain <host>] [--scanner true|false]
  enable <company id>
  disable <company id>
  add-member <company id> --email <email> --first-name <name> --last-name <name> [--role <role>]...
      Seats a person (created, or found by email) in an employer; --role defaults to Admin.
      Prints the person's id (mint their token with: npm run token -- mint --person <id>).
  container <publisher slug> [--vendor <vendor slug>:<category>]... [--disabled]
      Creates or replaces the publisher's consent container; vendors in the order given (none given:
      no vendors). --disabled without --vendor only disables it: it keeps the vendors it lists.
  license <license id> --name <name> --price <minor units> [--currency <ISO 4217>]
        [--full-scan] [--full-delete] [--site <site slug>]...
      Creates or replaces a catalog license covering the sites given (--price in cents:
      4900 is 49.00; --currency defaults to USD). Companies buy seats with
      POST /companies/{company_id}/licenses. Prints the license id.
  retire-license <license id>
      Removes a license from the catalog; refused while any company holds seats of it.
  phones [--status pending|verified|refused]
      Lists company phones waiting for verification (or verified or refused ones): id, company, number,
      label, and whether the number became a person's (a pending claim of it cannot be verified: reject
      it; a verified phone of it is removed with company-phones remove).
  phones release <+E.164>
      Ends every person's confirmation of a number (recycled by its carrier, a SIM swap reported):
      it stays on their records, unconfirmed, until someone proves it again.
  outbox [--to <email or +E.164>] [--limit <n>]
      Development only: the messages (sign-in and phone codes) the server would have sent by SMS or
      email, newest first. Without a token it reads the local database directly.
  verify-phone <phone id>
      Verifies a company phone: from then on its company's members (and whoever trusts the
      company) take calls from it as trusted, and call-lookup names the company.
  provider-signing <token id> twilio [--auth-token <auth token>]
  provider-signing <token id> telnyx [--public-key <public key>]
  provider-signing <token id> none
      Makes a provider token (scope calls:lookup; its id from \`npm run token -- list\`) answer only
      requests its provider signed: Twilio's X-Twilio-Signature with the account's auth token
      (default: $TWILIO_AUTH_TOKEN, so it stays out of your shell history), or Telnyx's Ed25519
      signature with the account's public key (default: $TELNYX_PUBLIC_KEY); \`none\` clears it.
      The secret is never printed; unsigned requests with that token then answer 403.
  provider-keys rotate
      Seals every stored Twilio auth token under the first key of the Worker secret
      PROVIDER_SECRET_KEYS (after you put a new key first: \`kid:base64url\`, comma, the old pair), and
      any an older version stored in clear. The minute cron does the same, 100 tokens a minute. Remove
      the old key from the secret once this prints "remaining: no, unopened: 0". Prints the JSON.
  company-phones reject <phone id>
      Rejects a company's pending claim on a number (it stays, as refused, until pruned 30 days after
      the claim; the company may claim the number again).
  company-phones remove <phone id>
      Removes a company phone, verified or pending: from the next lookup on, calls from the number
      are no longer trusted because of that company.
  move-person-data [--wait]
      Moves every person's activity and blocked calls from D1 into their own object (a background job;
      safe to start again). --wait polls until no person is pending. Prints the counts by state.
  move-status
      Where that move stands: people pending, moved, mismatch.
  move-companies [--wait]
      Moves every company's finished webhook history from D1 into the company's own object (a
      background job, 100 deliveries a chunk), and the scan side (scans, results, exposures and
      their history) of each company still served from D1, one company at a time, 100 members a
      chunk; safe to start again: a move resumes, and a second run moves nothing. --wait polls
      until no finished delivery and no company's scan side is left in D1. Prints what is left.
  rebuild-index [--wait]
      Rewrites every trust-lookup key from D1 and the person objects (a background job; starting it
      again while it runs resumes a part that has not moved for 5 minutes), then marks the index
      complete: from then on a lookup whose keys are absent is answered without D1. --wait polls
      until it is complete. Prints its status.
  index-status
      Where the rebuild stands, and whether the index is marked complete.
  push-keys
      Prints a fresh VAPID key pair for a deployment's Web Push (docs/app.md, "Push") as
      VAPID_PUBLIC_KEY=… and VAPID_PRIVATE_KEY=… lines; works offline, needs no token. Set both (and
      VAPID_SUBJECT, a mailto: or https: contact) with \`wrangler secret put … --env production\`; the
      public key is also what the web app subscribes with. A new pair invalidates every browser's
      subscription (they must subscribe again), so make it once per deployment.

Options:
  --api <url>      the API (default http://127.0.0.1:8787, the server of \`npm run dev\`)
  --token <token>  a service token with scope platform:admin (default: $ADMIN_TOKEN; --admin-token,
                   as \`npm run token\` names it, is the same);
                   mint one with: npm run token -- mint --service operator --scope platform:admin [--remote]`;

const { flags, positionals } = parseArgs(process.argv.slice(2), {
  switches: ["help", "scanner", "disabled", "full-scan", "full-delete", "wait"],
  options: [
    ...["api", "token", "admin-token", "name", "slug", "url", "logo", "domain", "profile-url", "status", "limit", "to"],
    ...["email", "first-name", "last-name", "role", "vendor", "price", "currency", "site", "auth-token", "public-key"],
  ],
});
const [command, ...args] = positionals;

if (flags.help || !command) {
  console.error(USAGE);
  process.exit(command || flags.help ? 0 : 1);
}

const api = String(flags.api ?? "http://127.0.0.1:8787").replace(/\/+$/, "");
// `--admin-token` is what `npm run token -- revoke` calls it: the same flag here.
const token = flags.token ?? flags["admin-token"] ?? process.env.ADMIN_TOKEN;

const commands = {
  status: showStatus,
  "create-company": createCompany,
  "update-company": updateCompany,
  enable: () => setStatus("enabled"),
  disable: () => setStatus("disabled"),
  "add-member": addMember,
  container: configureContainer,
  license: putLicense,
  "retire-license": retireLicense,
  phones: () => (args[0] === "release" ? releasePhone() : listPhones()),
  outbox: showOutbox,
  "verify-phone": verifyPhone,
  "provider-signing": providerSigning,
  "provider-keys": providerKeys,
  "company-phones": companyPhones,
  "move-person-data": movePersonData,
  "move-status": moveStatus,
  "move-companies": moveCompanies,
  "rebuild-index": rebuildIndex,
  "index-status": indexStatus,
};
if (command === "push-keys") {
  noMorePositionals(command, args, 0);
  printPushKeys();
  process.exit(0);
}
if (!commands[command]) fail(`unknown command "${command}".\n\n${USAGE}`);
// How many positionals (after the command's name) each command reads: a stray one is an error, not ignored.
const ARGUMENTS = {
  "create-company": 1,
  "update-company": 1,
  enable: 1,
  disable: 1,
  "add-member": 1,
  container: 1,
  license: 1,
  "retire-license": 1,
  phones: args[0] === "release" ? 2 : 0,
  "verify-phone": 1,
  "provider-signing": 2,
  "provider-keys": 1,
  "company-phones": 2,
};
noMorePositionals(command, args, ARGUMENTS[command] ?? 0, "Usage: npm run admin -- --help");
if (!token && command === "outbox") {
  localOutbox();
  process.exit(0);
}
if (!token) {
  fail(
    "no admin token: pass --token <token> or set ADMIN_TOKEN. Mint one with\n" +
      "  npm run token -- mint --service operator --scope platform:admin [--remote]",
  );
}
await commands[command]();

/** One flag's single value (the last, when repeated). */
function one(name) {
  const value = flags[name];
  return Array.isArray(value) ? value.at(-1) : value;
}

function required(name) {
  const value = one(name);
  if (value === undefined || value === "true") fail(`${command} needs --${name} <value>.\n\n${USAGE}`);
  return value;
}

function companyIdArg() {
  const id = args[0];
  if (!/^[0-9]+$/.test(id ?? "")) fail(`${command} needs a company id, e.g. \`npm run admin -- ${command} 11\`.`);
  return id;
}

/** Sends a request to the admin API; exits non-zero with the server's message on an error answer. */
async function request(method, path, body) {
  let response;
  try {
    response = await fetch(`${api}${path}`, {
      method,
      headers: { Authorization: `Bearer ${token}`, "Content-Type": "application/json", Accept: "application/json" },
      body: JSON.stringify(body),
    });
  } catch (err) {
    fail(
      `could not reach ${api} (${err.cause?.code ?? err.cause?.errors?.[0]?.code ?? err.cause?.message ?? err.message}). Is the server running (npm run dev), or is --api right?`,
    );
  }
  const text = await response.text();
  let answer;
  try {
    answer = JSON.parse(text);
  } catch {
    answer = null;
  }
  if (!response.ok) {
    const message = answer?.error?.message ?? (text.slice(0, 300) || response.statusText);
    fail(`${method} ${path} answered ${response.status}: ${message}`);
  }
  return answer;
}

/** `status`: GET /internal/status, as JSON on stdout and one line per kind of work on stderr. */
async function showStatus() {
  const status = await request("GET", "/internal/status");
  const age = (seconds) =>
    seconds < 120
      ? `${seconds} s`
      : seconds < 7200
        ? `${Math.round(seconds / 60)} min`
        : `${(seconds / 3600).toFixed(1)} h`;
  for (const [kind, backlog] of Object.entries(status)) {
    if (kind === "at") continue;
    const count = `${backlog.count}${backlog.capped ? "+" : ""}`;
    const oldest =
      backlog.oldest_age_seconds === null ? "" : `, oldest ${age(backlog.oldest_age_seconds)} (${backlog.oldest_at})`;
    console.error(`${kind.padEnd(13)} ${count.padStart(7)} due${oldest}`);
  }
  console.log(JSON.stringify(status, null, 2));
}

function describeCompany(company) {
  const extras = [
    company.url && `url ${company.url}`,
    company.domain && `domain ${company.domain}`,
    company.kind === "site" && `scanner ${company.scanner ? "yes" : "no"}`,
    company.profile_url && `profile ${company.profile_url}`,
  ].filter(Boolean);
  return `${company.kind} ${company.id} "${company.name}" (slug ${company.slug}, ${company.status}${extras.length ? `, ${extras.join(", ")}` : ""})`;
}

async function createCompany() {
  const kind = args[0];
  if (!KINDS.includes(kind)) fail(`create-company needs a kind: ${KINDS.join(", ")}.\n\n${USAGE}`);
  const body = { kind, name: required("name"), slug: required("slug") };
  for (const [flag, field] of [
    ["url", "url"],
    ["logo", "logo"],
    ["domain", "domain"],
    ["profile-url", "profile_url"],
  ]) {
    if (one(flag) !== undefined) body[field] = one(flag);
  }
  if (flags.scanner) body.scanner = true;
  const company = await request("POST", "/internal/companies", body);
  console.error(
    `Created ${describeCompany(company)}${kind === "employer" ? " with the roles Admin, HR and Viewer" : ""}.`,
  );
  console.log(company.id);
}

async function updateCompany() {
  const id = companyIdArg();
  const body = {};
  for (const field of ["name", "url", "logo", "domain"]) if (one(field) !== undefined) body[field] = one(field);
  // A switch (lib/cli.mjs): `--scanner`, `--scanner true|false` or `--scanner=true|false`.
  if (flags.scanner !== undefined) body.scanner = flags.scanner;
  if (Object.keys(body).length === 0)
    fail(`update-company needs at least one of --name, --url, --logo, --domain, --scanner.`);
  const company = await request("PATCH", `/internal/companies/${id}`, body);
  console.error(`Updated ${describeCompany(company)}.`);
}

async function setStatus(status) {
  const id = companyIdArg();
  const company = await request("PATCH", `/internal/companies/${id}`, { status });
  console.error(`${status === "enabled" ? "Enabled" : "Disabled"} ${describeCompany(company)}.`);
}

async function addMember() {
  const id = companyIdArg();
  const roles = [flags.role ?? "Admin"].flat();
  const body = {
    email: required("email"),
    first_name: required("first-name"),
    last_name: required("last-name"),
    roles,
  };
  const { person_id } = await request("POST", `/internal/companies/${id}/members`, body);
  console.error(
    `Seated person ${person_id} (${body.email}) in company ${id} with the role${roles.length > 1 ? "s" : ""} ${roles.join(", ")}.\n` +
      `Mint their token with: npm run token -- mint --person ${person_id}${api.includes("127.0.0.1") || api.includes("localhost") ? "" : " --remote"}`,
  );
  console.log(person_id);
}

async function configureContainer() {
  const slug = args[0];
  if (!slug)
    fail("container needs the publisher's slug, e.g. `npm run admin -- container gazette --vendor statly:analytics`.");
  const vendors = [flags.vendor ?? []].flat().map((entry) => {
    const match = /^([^:]+):(.+)$/.exec(entry);
    if (!match) fail(`--vendor takes <vendor slug>:<category>, e.g. --vendor statly:analytics (got "${entry}").`);
    return { slug: match[1], category: match[2] };
  });
  // Only what changes: disabling without --vendor leaves the vendor list out, and the container keeps it.
  const keep = flags.disabled && flags.vendor === undefined;
  const container = await request("PUT", `/internal/containers/${encodeURIComponent(slug)}`, {
    enabled: !flags.disabled,
    ...(keep ? {} : { vendors }),
  });
  const list = container.vendors.map((v, i) => `  ${i + 1}. ${v.slug} "${v.name}" (${v.category})`).join("\n");
  console.error(
    `Container ${container.company.slug} of "${container.company.name}" (domain ${container.company.domain || "none"}) is ` +
      `${container.enabled ? "enabled" : "disabled"} with ${container.vendors.length} vendor${container.vendors.length === 1 ? "" : "s"}` +
      `${list ? `:\n${list}` : "."}\nVisitors load it from ${api}/apps/vcc/load_container/${container.company.slug}`,
  );
}

function licenseIdArg() {
  const id = args[0];
  if (!id)
    fail(
      `${command} needs a license id, e.g. \`npm run admin -- ${command} protect${command === "license" ? " --name Protect --price 9900 --site peoplefinder" : ""}\`.`,
    );
  return id;
}

function money(price, currency) {
  return `${(price / 100).toFixed(2)} ${currency}`;
}

async function putLicense() {
  const id = licenseIdArg();
  const price = required("price");
  if (!/^[0-9]+$/.test(price))
    fail(`--price takes the price per seat in minor units (cents), e.g. --price 4900 for 49.00 (got "${price}").`);
  const body = {
    name: required("name"),
    price: Number(price),
    full_scan: Boolean(flags["full-scan"]),
    full_delete: Boolean(flags["full-delete"]),
    sites: [flags.site ?? []].flat(),
  };
  if (one("currency") !== undefined) body.currency = one("currency");
  const license = await request("PUT", `/internal/licenses/${encodeURIComponent(id)}`, body);
  const sites = license.sites.map((site) => site.name).join(", ") || "no sites";
  const scope = [license.full_scan && "full scan", license.full_delete && "full delete"].filter(Boolean).join(", ");
  console.error(
    `License ${license.id} "${license.name}": ${money(license.price, license.currency)} a seat, covering ${sites}` +
      `${scope ? ` (${scope})` : ""}.\nCompanies buy seats with POST /companies/{company_id}/licenses [{"id": "${license.id}", "quantity": n}].`,
  );
  console.log(license.id);
}

async function retireLicense() {
  const id = licenseIdArg();
  await request("DELETE", `/internal/licenses/${encodeURIComponent(id)}`);
  console.error(`Retired license ${id.toLowerCase()}: it is no longer in the catalog.`);
}

async function listPhones() {
  const status = one("status") ?? "pending";
  const rows = [];
  for (let page = 1; ; page++) {
    const batch = await request(
      "GET",
      `/internal/company-phones?status=${encodeURIComponent(status)}&page=${page}&per_page=1000`,
    );
    rows.push(...batch);
    if (batch.length < 1000) break;
  }
  console.error(`${rows.length} ${status} company phone${rows.length === 1 ? "" : "s"}`);
  for (const phone of rows) {
    // A pending claim of such a number cannot be verified: reject it. A verified phone cannot be rejected
    // (409): remove it (DELETE /internal/company-phones/{id}). A refused one needs nothing.
    const advice = {
      pending: `reject it: npm run admin -- company-phones reject ${phone.id}`,
      verified: `remove it: npm run admin -- company-phones remove ${phone.id}`,
    }[phone.status ?? status];
    const person = phone.belongs_to_person ? `\tbelongs to a person${advice ? `: ${advice}` : ""}` : "";
    console.log(`${phone.id}\tcompany ${phone.company_id}\t${phone.phone_full}\t${phone.label ?? ""}${person}`);
  }
}

async function verifyPhone() {
  const id = args[0];
  if (!/^[0-9]+$/.test(id ?? ""))
    fail(
      "verify-phone needs a company phone id, e.g. `npm run admin -- verify-phone 4` (see `npm run admin -- phones`).",
    );
  const phone = await request("POST", `/internal/company-phones/${id}/verify`);
  console.error(`verified ${phone.phone_full} of company ${phone.company_id}${phone.label ? ` (${phone.label})` : ""}`);
  console.log(phone.id);
}

/** `company-phones reject|remove <id>`: the operator's refusal of a claim, and removal of any phone. */
async function companyPhones() {
  const [verb, id] = args;
  const verbs = {
    reject: () => request("POST", `/internal/company-phones/${id}/reject`),
    remove: () => request("DELETE", `/internal/company-phones/${id}`),
  };
  if (!verbs[verb] || !/^[0-9]+$/.test(id ?? ""))
    fail(
      "company-phones needs reject or remove and a company phone id, e.g. " +
        "`npm run admin -- company-phones reject 4` (see `npm run admin -- phones`).",
    );
  await verbs[verb]();
  console.error(`${verb === "reject" ? "rejected" : "removed"} company phone ${id}`);
}

function describeMove(status) {
  return `${status.people} people: ${status.moved} moved, ${status.pending} pending, ${status.mismatch} mismatch`;
}

async function movePersonData() {
  let status = await request("POST", "/internal/person-data/move");
  console.error(`move started (${describeMove(status)})`);
  if (flags.wait) {
    // The walk (a background job) records people as pending a hundred at a time: wait until it shows (some
    // pending, or more moved, or the mismatches changed), then until no one is pending. `people` counts every
    // account, also those created after the walk passed (never walked, so never `moved`): not a target.
    // With everyone moved already, the walk has no one to record.
    const before = status;
    let walked = before.pending > 0 || before.moved >= before.people;
    const started = Date.now();
    for (;;) {
      await new Promise((resolve) => setTimeout(resolve, 2000));
      status = await request("GET", "/internal/person-data/move");
      console.error(`  ${describeMove(status)}`);
      walked ||= status.pending > 0 || status.moved > before.moved || status.mismatch !== before.mismatch;
      if (walked && status.pending === 0) break;
      if (Date.now() - started > 30 * 60_000)
        fail(
          walked
            ? "people still pending after 30 minutes; check `npm run admin -- status`"
            : "the walk recorded no one in 30 minutes; check `npm run admin -- status`",
        );
    }
  }
  console.log(JSON.stringify(status));
  if (status.mismatch > 0)
    fail(`${status.mismatch} people have fewer rows in their object than in D1: start the move again`);
}

function describeRebuild(status) {
  const where = status.stage ? `, stage ${status.stage}` : "";
  return (
    `trust index ${status.complete ? "complete" : "not complete"}: rebuild ${status.state}${where}, ${status.people} people, ${status.numbers} numbers written` +
    (status.ranges?.total ? `, ${status.ranges.done}/${status.ranges.total} ranges of the stage done` : "")
  );
}

async function rebuildIndex() {
  let status = await request("POST", "/internal/trust-index/rebuild");
  console.error(`rebuild started (${describeRebuild(status)})`);
  if (flags.wait) {
    const started = Date.now();
    while (status.state !== "complete") {
      await new Promise((resolve) => setTimeout(resolve, 1000));
      status = await request("GET", "/internal/trust-index/rebuild");
      console.error(`  ${describeRebuild(status)}`);
      if (Date.now() - started > 30 * 60_000) fail("still running after 30 minutes; check `npm run admin -- status`");
    }
  }
  console.log(JSON.stringify(status));
}

async function indexStatus() {
  const status = await request("GET", "/internal/trust-index/rebuild");
  console.error(describeRebuild(status));
  console.log(JSON.stringify(status));
}

function describeCompanyMove(status) {
  return (
    `${status.finished_in_d1} finished deliveries left in D1, ${status.on_their_way} on their way; ` +
    `${status.scan_side_in_d1} companies' scan side left in D1`
  );
}

async function moveCompanies() {
  let status = await request("POST", "/internal/company-data/move");
  console.error(`move started (${describeCompanyMove(status)})`);
  if (flags.wait) {
    const started = Date.now();
    while (status.finished_in_d1 > 0 || status.scan_side_in_d1 > 0) {
      await new Promise((resolve) => setTimeout(resolve, 1000));
      status = await request("GET", "/internal/company-data/move");
      console.error(`  ${describeCompanyMove(status)}`);
      if (Date.now() - started > 30 * 60_000) fail("still moving after 30 minutes; check `npm run admin -- status`");
    }
  }
  console.log(JSON.stringify(status));
}

async function moveStatus() {
  const status = await request("GET", "/internal/person-data/move");
  console.error(describeMove(status));
  console.log(JSON.stringify(status));
}

/** `provider-signing`: PUT or DELETE /internal/providers/{token id}/signing. */
async function providerSigning() {
  const [id, kind] = args;
  const example = "e.g. `npm run admin -- provider-signing 4 twilio` with TWILIO_AUTH_TOKEN set";
  if (!/^[0-9]+$/.test(id ?? "")) fail(`provider-signing needs a token id, ${example}.`);
  const path = `/internal/providers/${id}/signing`;
  let state;
  if (kind === "none") state = await request("DELETE", path);
  else if (kind === "twilio") {
    const authToken = one("auth-token") ?? process.env.TWILIO_AUTH_TOKEN;
    if (!authToken || authToken === "true") fail(`twilio needs --auth-token <auth token> or TWILIO_AUTH_TOKEN.`);
    state = await request("PUT", path, { kind, auth_token: authToken });
  } else if (kind === "telnyx") {
    const publicKey = one("public-key") ?? process.env.TELNYX_PUBLIC_KEY;
    if (!publicKey || publicKey === "true") fail(`telnyx needs --public-key <public key> or TELNYX_PUBLIC_KEY.`);
    state = await request("PUT", path, { kind, public_key: publicKey });
  } else fail(`provider-signing needs twilio, telnyx or none after the token id, ${example}.`);
  console.error(
    state.kind
      ? `token ${state.token_id} now answers only requests ${state.kind === "twilio" ? "Twilio" : "Telnyx"} signed (everywhere within 60 s)`
      : `token ${state.token_id} answers unsigned requests again (everywhere within 60 s)`,
  );
  console.log(state.kind ?? "none");
}

/** `phones release <+E.164>`: POST /internal/phones/{e164}/release. */
async function releasePhone() {
  const e164 = args[1];
  if (!/^\+[0-9]{4,16}$/.test(e164 ?? "")) fail("phones release needs a number in E.164 form, e.g. +14155550199.");
  const { released } = await request("POST", `/internal/phones/${encodeURIComponent(e164)}/release`);
  console.error(`${e164}: ${released} confirmation${released === 1 ? "" : "s"} ended.`);
}

function outboxLine(m) {
  return `${m.created_at}  ${m.channel.padEnd(5)} to ${m.to}\n    ${m.body.replaceAll("\n", "\n    ")}`;
}

/** `push-keys`: a VAPID pair on stdout (offline), what to do with it on stderr. */
function printPushKeys() {
  const { publicKey, privateKey } = vapidKeyPair();
  console.log(`VAPID_PUBLIC_KEY=${publicKey}`);
  console.log(`VAPID_PRIVATE_KEY=${privateKey}`);
  console.error(
    "Set them, and a contact, as the deployment's secrets:\n" +
      "  wrangler secret put VAPID_PUBLIC_KEY --env production\n" +
      "  wrangler secret put VAPID_PRIVATE_KEY --env production\n" +
      "  wrangler secret put VAPID_SUBJECT --env production   # mailto:ops@example.com or https://…\n" +
      "The web app subscribes with VAPID_PUBLIC_KEY (PushManager.subscribe's applicationServerKey).",
  );
}

/** `outbox`: GET /internal/outbox (development only). */
async function showOutbox() {
  const query = new URLSearchParams({ limit: String(one("limit") ?? 20) });
  if (one("to")) query.set("to", one("to"));
  const messages = await request("GET", `/internal/outbox?${query}`);
  if (messages.length === 0) console.error("The outbox is empty.");
  for (const message of messages) console.log(outboxLine(message));
}

/** `outbox` without a token: the local database of `npm run dev`, read directly. */
function localOutbox() {
  const limit = Math.min(100, Math.max(1, Number(one("limit") ?? 20) || 20));
  const to = one("to");
  const where = to ? `WHERE "to" = '${String(to).toLowerCase().replaceAll("'", "''")}'` : "";
  const [rows] = d1(`SELECT "to", channel, body, created_at FROM dev_outbox ${where} ORDER BY id DESC LIMIT ${limit}`);
  if (rows.length === 0) console.error("The outbox is empty.");
  for (const row of rows) console.log(outboxLine({ ...row, created_at: new Date(row.created_at).toISOString() }));
}

/** `provider-keys rotate`: POST /internal/provider-keys/rotate, until nothing is left or nothing moves. */
async function providerKeys() {
  if (args[0] !== "rotate") fail("provider-keys needs `rotate`, e.g. `npm run admin -- provider-keys rotate`.");
  let total = { key_id: null, resealed: 0, unopened: 0, remaining: true };
  while (total.remaining) {
    const run = await request("POST", "/internal/provider-keys/rotate");
    total = { ...run, resealed: total.resealed + run.resealed };
    if (run.resealed === 0) break;
  }
  console.error(
    `sealed under key ${total.key_id}: ${total.resealed} auth token(s) sealed again; ` +
      `remaining: ${total.remaining ? "yes (run again)" : "no"}, unopened: ${total.unopened}` +
      (total.unopened > 0 ? " (their key is no longer in PROVIDER_SECRET_KEYS: list it again after the new one)" : ""),
  );
  console.log(JSON.stringify(total));
}
