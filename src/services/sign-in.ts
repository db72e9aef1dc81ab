import { sql } from "drizzle-orm";
import { accessTokens, memberships, people, personEmails, personPhones } from "../db/schema";
import { batchableAll } from "../db/sql";
import type { Phone } from "../lib/phone";
import { logError } from "../lib/log";
import { checkCode, issueCode, spendStatements, type CodeSettings } from "./codes";
import { newToken } from "./tokens";
import { commitSpending, takeNumber, tellPhonesChanged } from "./my-phones";
import { settleTokenRecords } from "./trust-index/token-slots";
import { WriteBatch } from "./outbox";
import type { Deps } from "./deps";

/*
 * Signing in (docs/app.md, "Signing in"): a person the platform knows proves an email or a phone with a
 * one-time code and gets a person token for one device. No account is created. `POST /auth/codes` answers
 * the same, in about the same time, whether or not the address reaches anyone: the row that counts the
 * request is written either way, and the message leaves after the answer.
 */

export type Address = { email: string } | { phone: Phone };

const addressOf = (address: Address) =>
  "email" in address
    ? { channel: "email" as const, address: address.email, country: null }
    : { channel: "sms" as const, address: address.phone.e164, country: address.phone.countryCode };

/**
 * The one person `address` signs in (docs/security.md, "Signing in"), or null, in one read either way:
 * - an email: its person, unless a company manages it that is not the one that entered the person
 *   (`people.entered_by_company_id`, kept after that company removed them): an employer cannot open,
 *   with an address of its choosing, an account another company made, and with it that person's roles
 *   elsewhere. For an account older than that column, a managed email signs in only while its person
 *   belongs to no other company;
 * - a phone: the one person who confirmed it, else the one person holding it, but only until they
 *   have signed in once (`people.last_login_at`): after that, a number an employer typed onto their
 *   record does not open the account they claimed (an employer's edits never carry a confirmation).
 */
export async function accountOpenedBy(deps: Deps, address: Address): Promise<number | null> {
  if ("email" in address) {
    const [row] = await deps.db.all<{ id: number; foreign: number }>(
      sql`select e.person_id as id,
            case when e.employer_company_id is null then 0
                 when p.entered_by_company_id is not null then e.employer_company_id <> p.entered_by_company_id
                 else exists (select 1 from ${memberships} m
                              where m.person_id = e.person_id and m.company_id <> e.employer_company_id)
            end as "foreign"
          from ${personEmails} e join ${people} p on p.id = e.person_id where e.email = ${address.email}`,
    );
    return row && !row.foreign ? row.id : null;
  }
  // The confirmed holder first, then up to two holders (two: not one person).
  const rows = await deps.db.all<{ id: number; confirmed: number; loggedIn: number }>(
    sql`select f.person_id as id, f.confirmed, p.last_login_at is not null as loggedIn
        from ${personPhones} f join ${people} p on p.id = f.person_id
        where f.e164 = ${address.phone.e164}
        order by f.confirmed desc limit 2`,
  );
  if (rows[0]?.confirmed) return rows[0].id;
  const holders = new Set(rows.map((row) => row.id));
  return holders.size === 1 && !rows[0]!.loggedIn ? rows[0]!.id : null;
}

/**
 * `POST /auth/codes`: counts the request, and sends a code when the address reaches one person. The
 * message leaves in `background` (after the answer), so the answer's time does not tell whether it went.
 */
export async function requestSignInCode(
  deps: Deps,
  settings: CodeSettings,
  address: Address,
  ip: string,
  background: (work: Promise<unknown>) => void,
) {
  const personId = await accountOpenedBy(deps, address);
  const where = addressOf(address);
  let sending: Promise<unknown> = Promise.resolve();
  const deferred: CodeSettings = {
    ...settings,
    send: (message) => {
      sending = settings.send(message);
      return Promise.resolve();
    },
  };
  await issueCode(deps, deferred, { ...where, purpose: "sign_in", personId, ip });
  background(sending.catch((err) => logError("a sign-in code was not sent; the person can ask again", err)));
}

/**
 * `POST /auth/tokens`: spends the address's code and creates a person token named `deviceName`, in one
 * batch; signing in by phone also proves that phone (possession wins, services/my-phones.ts). The
 * person's open streams hear `device`.
 */
export async function signIn(
  deps: Deps,
  key: string | undefined,
  address: Address,
  code: string,
  deviceName: string,
  now = new Date(),
) {
  const where = addressOf(address);
  const spent = await checkCode(deps, key, { address: where.address, purpose: "sign_in", code }, now);
  const personId = spent.personId;
  const minted = await newToken("pk");
  const batch = new WriteBatch(deps, now);
  for (const statement of spendStatements(deps, spent.id, now)) batch.add(statement);
  const inserted = batch.add(
    deps.db
      .insert(accessTokens)
      .values({ tokenHash: minted.hash, prefix: minted.prefix, personId, scopes: [], deviceName, createdAt: now })
      .returning({
        id: accessTokens.id,
        deviceName: accessTokens.deviceName,
        createdAt: accessTokens.createdAt,
      }),
  );
  let losers = -1;
  // They have signed in: from now on only a phone they proved signs them in by phone.
  // (In SQL: drizzle's update would move `updated_at`, which tells the person's object new facts.)
  batch.add(
    batchableAll(
      deps.db,
      sql`update ${people} set last_login_at = max(coalesce(last_login_at, 0), ${now.getTime()})
          where id = ${personId} returning id`,
    ),
  );
  if ("phone" in address) {
    // One row of the person's confirmed: the oldest, should they hold the number twice.
    const row = sql`select min(id) from ${personPhones} where person_id = ${personId} and e164 = ${where.address}`;
    losers = batch.add(takeNumber(deps, where.address, row));
    batch.add(
      deps.db
        .update(personPhones)
        .set({ confirmed: true })
        .where(sql`${personPhones.id} = (${row})`),
    );
    batch.markStaleNumbers([where.address]);
  }
  const results = await commitSpending(batch);
  const [row] = results[inserted] as { id: number; deviceName: string; createdAt: Date }[];
  const device = { id: row!.id, name: row!.deviceName, created_at: row!.createdAt.toISOString() };
  if (losers >= 0) await tellPhonesChanged(deps, results[losers] as { personId: number }[]);
  // The person's object holds the device from now on (its first use adopts it too, should this fail); the
  // token's verification record is written now, so even its first request reads no D1.
  const claim = { tokenId: device.id, name: deviceName, createdAt: now.getTime(), expiresAt: null, usedAt: null };
  await Promise.all([
    deps.objects
      .write(personId, (person) => person.addDevice(claim))
      .then(() => deps.objects.of(personId).announce({ type: "device", data: device }))
      .catch((err: unknown) => logError("a new device was not told to its object; its first use adopts it", err)),
    settleTokenRecords(deps, [minted.hash], now).catch((err: unknown) =>
      logError("a new token's record was not written; its first use writes it", err),
    ),
  ]);
  return { token: minted.token, device };
}
