import { and, asc, eq, sql, type SQL } from "drizzle-orm";
import { batchableAll } from "../db/sql";
import { personPhones, secureNumbers } from "../db/schema";
import { badRequest, conflict, notFound } from "../lib/errors";
import type { Phone } from "../lib/phone";
import { checkCode, issueCode, spendStatements, type CodeSettings } from "./codes";
import { WriteBatch } from "./outbox";
import type { Deps } from "./deps";

/*
 * A person's own phones (docs/security.md, "Proving a phone"): an employer may enter or change them, but
 * only a phone the person proved (a code sent to it, or signing in by it) carries the trust others gave
 * them and receives what is addressed to the number. Possession wins: proving a number someone else had
 * confirmed takes it from them (their phone stays on their record, unconfirmed). A number is confirmed by
 * at most one person.
 */

/** A phone of the caller's, as `GET /me/phones` shows it. */
export type MyPhone = {
  id: number;
  country_code: string;
  phone_number: string;
  phone_full: string;
  primary: boolean;
  confirmed: boolean;
};

const columns = {
  id: personPhones.id,
  countryCode: personPhones.countryCode,
  phoneNumber: personPhones.phoneNumber,
  e164: personPhones.e164,
  primary: personPhones.primary,
  confirmed: personPhones.confirmed,
};

type PhoneRow = {
  id: number;
  countryCode: string;
  phoneNumber: string;
  e164: string;
  primary: boolean;
  confirmed: boolean;
};

const toMyPhone = (row: PhoneRow): MyPhone => ({
  id: row.id,
  country_code: row.countryCode,
  phone_number: row.phoneNumber,
  phone_full: row.e164,
  primary: row.primary,
  confirmed: row.confirmed,
});

/** The caller's phones, oldest first (a person holds a handful: no paging). */
export async function listMyPhones(deps: Deps, personId: number): Promise<MyPhone[]> {
  const rows = await deps.db
    .select(columns)
    .from(personPhones)
    .where(eq(personPhones.personId, personId))
    .orderBy(asc(personPhones.id))
    .all();
  return rows.map(toMyPhone);
}

/** Most phones one person keeps on their record. */
export const MAX_MY_PHONES = 20;

/**
 * Adds `phone` to the caller's record, unconfirmed (201); the same number again answers the phone they
 * hold (200). A secure number of the platform's pool is a 409: nobody proves one by SMS.
 */
export async function addMyPhone(
  deps: Deps,
  personId: number,
  phone: Phone,
): Promise<{ phone: MyPhone; created: boolean }> {
  const [mine, pool] = await deps.db.batch([
    deps.db.select(columns).from(personPhones).where(eq(personPhones.personId, personId)).orderBy(asc(personPhones.id)),
    deps.db.select({ e164: secureNumbers.e164 }).from(secureNumbers).where(eq(secureNumbers.e164, phone.e164)),
  ]);
  const held = mine.find((row) => row.e164 === phone.e164);
  if (held) return { phone: toMyPhone(held), created: false };
  if (pool.length > 0) throw conflict("this number is one of the platform's secure numbers");
  if (mine.length >= MAX_MY_PHONES) throw badRequest(`a person keeps at most ${MAX_MY_PHONES} phones`);
  // Only while the person does not hold the number yet: two adds at once (a double tap, a retry) write
  // one row, and the other answers it as held.
  const theirs = sql`from ${personPhones} where ${personPhones.personId} = ${personId}`;
  const [row] = await deps.db.all<{ id: number; isPrimary: number }>(
    sql`insert into ${personPhones} (person_id, country_code, phone_number, e164, "primary", confirmed)
        select ${personId}, ${phone.countryCode}, ${phone.nationalNumber}, ${phone.e164},
               not exists (select 1 ${theirs}), 0
        where not exists (select 1 ${theirs} and ${personPhones.e164} = ${phone.e164})
        returning id, "primary" as isPrimary`,
  );
  if (row) {
    const { countryCode, nationalNumber: phoneNumber, e164 } = phone;
    const added = { id: row.id, countryCode, phoneNumber, e164, primary: row.isPrimary === 1, confirmed: false };
    return { phone: toMyPhone(added), created: true };
  }
  const now = await deps.db
    .select(columns)
    .from(personPhones)
    .where(and(eq(personPhones.personId, personId), eq(personPhones.e164, phone.e164)))
    .get();
  if (!now) throw conflict("this phone was removed while it was being added; add it again");
  return { phone: toMyPhone(now), created: false };
}

async function myPhone(deps: Deps, personId: number, phoneId: number): Promise<PhoneRow> {
  const row = await deps.db
    .select(columns)
    .from(personPhones)
    .where(and(eq(personPhones.id, phoneId), eq(personPhones.personId, personId)))
    .get();
  if (!row) throw notFound(`phone ${phoneId} does not exist`);
  return row;
}

/** Sends phone `phoneId` of the caller a code (202). Its limits and failures: services/codes.ts. */
export async function sendPhoneCode(deps: Deps, settings: CodeSettings, personId: number, phoneId: number, ip: string) {
  const row = await myPhone(deps, personId, phoneId);
  await issueCode(deps, settings, {
    channel: "sms",
    address: row.e164,
    purpose: "phone",
    personId,
    phoneId,
    ip,
    country: row.countryCode,
  });
}

/**
 * The caller proves phone `phoneId` with the code sent to it: confirmed, and taken from whoever had
 * confirmed the number before (possession wins; their streams hear `phones`). A wrong, spent or expired
 * code is a 400 and changes nothing. Confirming a confirmed phone with its code changes nothing more.
 */
export async function confirmMyPhone(
  deps: Deps,
  key: string | undefined,
  personId: number,
  phoneId: number,
  code: string,
) {
  const row = await myPhone(deps, personId, phoneId);
  const spent = await checkCode(deps, key, { address: row.e164, purpose: "phone", code, personId, phoneId });
  const batch = new WriteBatch(deps);
  for (const statement of spendStatements(deps, spent.id, batch.now)) batch.add(statement);
  const losers = batch.add(takeNumber(deps, row.e164, phoneId));
  batch.add(deps.db.update(personPhones).set({ confirmed: true }).where(eq(personPhones.id, phoneId)));
  batch.markStaleNumbers([row.e164]);
  const results = await commitSpending(batch);
  await tellPhonesChanged(deps, results[losers] as { personId: number }[]);
  return toMyPhone({ ...row, confirmed: true });
}

/**
 * The statement that ends every confirmation of `e164` but the row `kept` (possession wins: the row
 * its prover confirms next; null: all of them, the operator's release), returning whose ended. Shared
 * by proving a phone, signing in by it (services/sign-in.ts) and the release. Only one row of a number
 * is ever confirmed (a unique index), so the row kept is the one to confirm: a person holding the
 * number twice (rows written before adds were made single) loses the other row's confirmation too,
 * rather than the batch failing on the index.
 */
export const takeNumber = (deps: Deps, e164: string, kept: number | SQL | null) =>
  batchableAll<{ personId: number }>(
    deps.db,
    sql`update ${personPhones} set confirmed = 0
        where ${personPhones.e164} = ${e164} and ${personPhones.confirmed} = 1
          and ${kept === null ? sql`1` : sql`${personPhones.id} != (${kept})`}
        returning person_id as personId`,
  );

/**
 * Commits a batch that spends a code (`spendStatements`); another request that spent it first makes
 * it a 400 and nothing is written: the guard's check answers it (db/guard.ts).
 */
export async function commitSpending(batch: WriteBatch): Promise<unknown[]> {
  return (await batch.commit()).results;
}

/** The people whose confirmation of a number ended: their open streams hear `{"type": "phones"}`. */
export async function tellPhonesChanged(deps: Deps, rows: { personId: number }[]) {
  const people = [...new Set(rows.map((row) => row.personId))];
  await Promise.all(
    people.map((id) =>
      deps.objects
        .of(id)
        .announce({ type: "phones" })
        .catch(() => undefined),
    ),
  );
}

/**
 * The operator ends every confirmation of `e164` (`POST /internal/phones/{e164}/release`): the phone stays
 * on its holders' records, unconfirmed, and the index follows. Returns how many confirmations ended.
 */
export async function releaseNumber(deps: Deps, e164: string): Promise<number> {
  const batch = new WriteBatch(deps);
  const released = batch.add(takeNumber(deps, e164, null));
  batch.markStaleNumbers([e164]);
  const rows = (await batch.commit()).results[released] as { personId: number }[];
  await tellPhonesChanged(deps, rows);
  return rows.length;
}
