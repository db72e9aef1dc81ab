import { and, count, eq, gte, isNull, min, sql, type SQL } from "drizzle-orm";
import type { BatchItem } from "drizzle-orm/batch";
import { guardStatement, type GuardStatement } from "../db/guard";
import { batchableAll } from "../db/sql";
import { oneTimeCodes, secureNumbers } from "../db/schema";
import { ApiError, badRequest, maskPersonalData, tooManyRequests } from "../lib/errors";
import { base64url, fromBase64url } from "../lib/crypto";
import { logError } from "../lib/log";
import { DAY_MS } from "../lib/time";
import type { Deps } from "./deps";
import type { CodeSettings } from "./code-settings";
import { NotSent, type Channel } from "./messaging";

/*
 * One-time codes (docs/security.md, "Codes"): 6 random digits, kept only as an HMAC under the CODE_KEY
 * secret, valid 10 minutes, void after 5 wrong tries, compared in constant time (Web Crypto's `verify`).
 * Limits: 5 codes an hour to one address, 20 an hour from one client IP, 10 a day per person; SMS only to
 * allowed countries and at most a configured number a day per country. A request is counted whether or
 * not its address reaches anyone, so the limits say nothing about who exists.
 */

export const CODE_TTL_MS = 10 * 60_000;
export const MAX_TRIES = 5;
const HOUR_MS = 3_600_000;
export const CODE_LIMITS = { perAddressPerHour: 5, perIpPerHour: 20, perPersonPerDay: 10 } as const;

export type { CodeSettings } from "./code-settings";

export type Purpose = "sign_in" | "phone";
export const INVALID_CODE = "invalid or expired code";

/** Who a code is for; `personId` null: the address reaches nobody (counted, nothing sent). */
export type CodeRequest = {
  channel: Channel;
  address: string;
  purpose: Purpose;
  personId: number | null;
  phoneId?: number | null;
  ip: string;
  /** The calling code of an SMS's number. */
  country?: string | null;
};

/**
 * Counts the request against its limits, records it, and (when it reaches a person) sends a fresh code.
 * A limit passed is a 429 with `Retry-After`, an SMS country not allowed a 400, both before anything is
 * recorded or sent. A message that does not leave is a 502/503; the code stays valid.
 */
export async function issueCode(deps: Deps, settings: CodeSettings, request: CodeRequest, now = new Date()) {
  // Checked before the address is looked at: without the key every request is the same 503, whether
  // the address reaches someone or not (a 202 for one and a 503 for the other would tell).
  if (!settings.key) throw noCodeKey();
  const code = randomCode();
  const hash = request.personId === null ? null : await codeHash(settings.key, request.address, request.purpose, code);
  const limits = limitsSql(request, settings, now);
  // One statement both checks every limit and records the request, so requests at the same moment cannot
  // all pass a check made before the write. A sign-in past the person's day is written like any other with
  // no code and sends nothing: a 429 there would tell a stranger that the address belongs to someone
  // (docs/security.md, "Proving a phone").
  const [row] = await deps.db.all<{ reaches: number }>(
    sql`insert into ${oneTimeCodes}
          (channel, address, purpose, person_id, phone_id, ip, country, code_hash, expires_at, created_at)
        select ${request.channel}, ${request.address}, ${request.purpose}, ${request.personId},
               ${request.phoneId ?? null}, ${request.ip},
               ${request.channel === "sms" ? (request.country ?? null) : null},
               case when ${limits.personLeft} then ${hash} end,
               ${now.getTime() + CODE_TTL_MS}, ${now.getTime()}
        where ${limits.within}
        returning code_hash is not null as reaches`,
  );
  if (!row) {
    // Nothing recorded: which limit refused it, with its wait (a request at the same moment may have taken
    // the last place and be gone from the count by now: then the generic 429).
    await explainRefusal(deps, settings, request, now);
    throw tooManyRequests("too many codes were asked at once; try again in 1 s", 1);
  }
  const reaches = row.reaches === 1;
  if (!reaches) return;
  const text = `${code} is your verification code. It expires in 10 minutes.`;
  try {
    await settings.send({
      channel: request.channel,
      to: request.address,
      subject: "Your verification code",
      body: request.channel === "sms" ? `${text}\n\n@${settings.host} #${code}` : text,
    });
  } catch (err) {
    if (!(err instanceof NotSent)) throw err;
    // The provider's words, its numbers and addresses masked: it may quote the number it refused.
    if (err.providerText) logError("a code was not sent", err, { provider_answer: maskPersonalData(err.providerText) });
    throw new ApiError(err.kind === "refused" ? 502 : 503, `the code could not be sent: ${err.message}`);
  }
}

/** The code's row (to spend in the caller's batch, `spendStatements`), or 400 `invalid or expired code`. */
export async function checkCode(
  deps: Deps,
  key: string | undefined,
  wanted: { address: string; purpose: Purpose; code: string; personId?: number; phoneId?: number },
  now = new Date(),
): Promise<{ id: number; personId: number; phoneId: number | null }> {
  // Only the newest code of the address (and person) counts: asking again replaces the one before. The
  // try is charged before the code is compared, in one statement that takes it only while the code is
  // usable, so guesses sent at the same moment get five tries between them, not five each; and an
  // address without a code costs the same one statement as one with a code (the time tells nothing).
  const newest = sql`(select ${oneTimeCodes.id} from ${oneTimeCodes}
    where ${oneTimeCodes.address} = ${wanted.address} and ${oneTimeCodes.purpose} = ${wanted.purpose}
      and ${oneTimeCodes.codeHash} is not null
      ${wanted.personId === undefined ? sql`` : sql`and ${oneTimeCodes.personId} = ${wanted.personId}`}
    order by ${oneTimeCodes.id} desc limit 1)`;
  const [row] = await deps.db.all<{ id: number; personId: number; phoneId: number | null; codeHash: string }>(
    sql`update ${oneTimeCodes} set tries = tries + 1
        where id = ${newest} and person_id is not null and spent_at is null
          and expires_at > ${now.getTime()} and tries < ${MAX_TRIES}
          ${wanted.phoneId === undefined ? sql`` : sql`and phone_id = ${wanted.phoneId}`}
        returning id, person_id as personId, phone_id as phoneId, code_hash as codeHash`,
  );
  if (
    row === undefined ||
    !/^\d{6}$/.test(wanted.code) ||
    !(await codeMatches(key, row.codeHash, wanted.address, wanted.purpose, wanted.code))
  )
    throw badRequest(INVALID_CODE);
  return { id: row.id, personId: row.personId, phoneId: row.phoneId };
}

/**
 * The statements that spend code `id` at the head of a command's batch: the spend, then a guard that
 * rolls the whole batch back when another request spent it first (the batch's effects never happen
 * twice). Its check, asked after a rollback (db/guard.ts): the code is spent (or gone) now, which
 * answers `INVALID_CODE` like a code spent before the request.
 */
export function spendStatements(deps: Deps, id: number, now: Date): [BatchItem<"sqlite">, GuardStatement] {
  return [
    deps.db
      .update(oneTimeCodes)
      .set({ spentAt: now })
      .where(and(eq(oneTimeCodes.id, id), isNull(oneTimeCodes.spentAt))),
    guardStatement(deps.db, "codeSpent", sql`changes() = 0`, async () => {
      const [code] = await deps.db
        .select({ id: oneTimeCodes.id })
        .from(oneTimeCodes)
        .where(and(eq(oneTimeCodes.id, id), isNull(oneTimeCodes.spentAt)));
      if (!code) throw badRequest(INVALID_CODE);
    }),
  ];
}

/* ---------- limits ---------- */

/**
 * The limits as SQL over the rows already written, for the insert that records a request (`issueCode`):
 * `within` holds while the address, the client and (for an SMS) its country are under their limits, and
 * (for a phone code) the person too; `personLeft` says whether the person's day still allows a code.
 */
function limitsSql(request: CodeRequest, settings: CodeSettings, now: Date) {
  const t = now.getTime();
  const count = (column: SQL, value: unknown, since: number) =>
    sql`(select count(*) from ${oneTimeCodes} where ${column} = ${value} and ${oneTimeCodes.createdAt} >= ${since})`;
  const day = Math.floor(t / DAY_MS) * DAY_MS;
  const personLeft =
    request.personId === null
      ? sql`0`
      : sql`${count(sql`${oneTimeCodes.personId}`, request.personId, t - DAY_MS)} < ${CODE_LIMITS.perPersonPerDay}`;
  const sms = request.channel === "sms" && request.country ? request.country : null;
  return {
    personLeft,
    within: sql`${count(sql`${oneTimeCodes.address}`, request.address, t - HOUR_MS)} < ${CODE_LIMITS.perAddressPerHour}
      and ${count(sql`${oneTimeCodes.ip}`, request.ip, t - HOUR_MS)} < ${CODE_LIMITS.perIpPerHour}
      ${sms === null ? sql`` : sql`and ${smsAllowedSql(settings, sms)} and ${count(sql`${oneTimeCodes.country}`, sms, day)} < ${settings.smsDailyCap}`}
      ${request.purpose === "sign_in" || request.personId === null ? sql`` : sql`and ${personLeft}`}`,
  };
}

/**
 * Whether codes go by SMS to calling code `sms`: the configured countries, else those of the
 * secure-number pool (a secure number with this calling code: a range of the unique index).
 */
const smsAllowedSql = (settings: CodeSettings, sms: string) =>
  settings.smsCountries
    ? sql`${settings.smsCountries.includes(sms) ? 1 : 0}`
    : sql`exists (select 1 from ${secureNumbers}
        where ${secureNumbers.e164} >= ${`+${sms}`} and ${secureNumbers.e164} < ${`+${sms}:`})`;

/**
 * Why `issueCode` recorded nothing, read again after its insert refused: throws the first limit that
 * refuses now, in the order a person meets them (the SMS country, its day, the address, the client,
 * the person's day for a phone code), each with its wait; returns when none does.
 */
async function explainRefusal(deps: Deps, settings: CodeSettings, request: CodeRequest, now: Date): Promise<void> {
  const since = (ms: number) => new Date(now.getTime() - ms);
  const window = (where: ReturnType<typeof and>) =>
    deps.db
      .select({ n: count(), oldest: min(oneTimeCodes.createdAt) })
      .from(oneTimeCodes)
      .where(where);
  const day = new Date(Math.floor(now.getTime() / DAY_MS) * DAY_MS);
  const sms = request.channel === "sms" && request.country ? request.country : null;
  const [byAddress, byIp, byPerson, byCountry, [country]] = await deps.db.batch([
    window(and(eq(oneTimeCodes.address, request.address), gte(oneTimeCodes.createdAt, since(HOUR_MS)))),
    window(and(eq(oneTimeCodes.ip, request.ip), gte(oneTimeCodes.createdAt, since(HOUR_MS)))),
    window(and(eq(oneTimeCodes.personId, request.personId ?? -1), gte(oneTimeCodes.createdAt, since(DAY_MS)))),
    window(and(eq(oneTimeCodes.country, sms ?? ""), gte(oneTimeCodes.createdAt, day))),
    batchableAll<{ allowed: number }>(deps.db, sql`select ${smsAllowedSql(settings, sms ?? "-")} as allowed`),
  ]);
  const refuse = (what: string, row: { oldest: Date | null } | undefined, windowMs: number) => {
    const oldest = row?.oldest?.getTime() ?? now.getTime();
    const wait = Math.max(1, Math.ceil((oldest + windowMs - now.getTime()) / 1000));
    throw tooManyRequests(`${what}; try again in ${wait} s`, wait);
  };
  if (sms !== null) {
    if (!country?.allowed) throw badRequest("codes are not sent to this country");
    if (byCountry[0]!.n >= settings.smsDailyCap) {
      const wait = Math.ceil((day.getTime() + DAY_MS - now.getTime()) / 1000);
      throw tooManyRequests(`the day's codes by SMS to this country are spent; try again in ${wait} s`, wait);
    }
  }
  if (byAddress[0]!.n >= CODE_LIMITS.perAddressPerHour) {
    refuse(`at most ${CODE_LIMITS.perAddressPerHour} codes an hour go to one address`, byAddress[0], HOUR_MS);
  }
  if (byIp[0]!.n >= CODE_LIMITS.perIpPerHour) {
    refuse(`at most ${CODE_LIMITS.perIpPerHour} codes an hour are asked from one client`, byIp[0], HOUR_MS);
  }
  const personSpent = request.personId !== null && byPerson[0]!.n >= CODE_LIMITS.perPersonPerDay;
  if (personSpent && request.purpose !== "sign_in") {
    refuse(`at most ${CODE_LIMITS.perPersonPerDay} codes a day go to one person`, byPerson[0], DAY_MS);
  }
}

/* ---------- the code and its hash ---------- */

/** 6 uniformly random digits (rejection sampling: no digit is likelier than another). */
export function randomCode(): string {
  const limit = 4_294_000_000; // the largest multiple of 10^6 below 2^32
  for (;;) {
    const [value] = crypto.getRandomValues(new Uint32Array(1));
    if (value! < limit) return String(value! % 1_000_000).padStart(6, "0");
  }
}

async function hmacKey(secret: string | undefined): Promise<CryptoKey> {
  if (!secret) throw noCodeKey();
  return crypto.subtle.importKey("raw", fromBase64url(secret), { name: "HMAC", hash: "SHA-256" }, false, [
    "sign",
    "verify",
  ]);
}

const noCodeKey = () =>
  new ApiError(503, "codes cannot be sent or checked: this deployment has no CODE_KEY secret (docs/security.md)");

const codeInput = (address: string, purpose: Purpose, code: string) =>
  new TextEncoder().encode(`${purpose}:${address}:${code}`);

async function codeHash(secret: string | undefined, address: string, purpose: Purpose, code: string) {
  const signature = await crypto.subtle.sign("HMAC", await hmacKey(secret), codeInput(address, purpose, code));
  return base64url(new Uint8Array(signature));
}

/** Web Crypto's HMAC verify compares in constant time. */
async function codeMatches(secret: string | undefined, hash: string, address: string, purpose: Purpose, code: string) {
  return crypto.subtle.verify("HMAC", await hmacKey(secret), fromBase64url(hash), codeInput(address, purpose, code));
}
