import { and, asc, eq } from "drizzle-orm";
import { errorText } from "../db/errors";
import { personPhones } from "../db/schema";
import { conflict, notFound } from "../lib/errors";
import { WriteBatch } from "./outbox";
import type { Deps } from "./deps";

/*
 * A person's own phones (docs/decisions.md, "Who is trusted"): an employer
 * may enter or change them, but only a phone the person confirmed carries
 * the trust others gave them. A number is confirmed by at most one person.
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

const toMyPhone = (row: {
  id: number;
  countryCode: string;
  phoneNumber: string;
  e164: string;
  primary: boolean;
  confirmed: boolean;
}): MyPhone => ({
  id: row.id,
  country_code: row.countryCode,
  phone_number: row.phoneNumber,
  phone_full: row.e164,
  primary: row.primary,
  confirmed: row.confirmed,
});

/** The caller's phones, oldest first (a person holds a handful: no paging). */
export async function listMyPhones(deps: Pick<Deps, "db">, personId: number): Promise<MyPhone[]> {
  const rows = await deps.db
    .select(columns)
    .from(personPhones)
    .where(eq(personPhones.personId, personId))
    .orderBy(asc(personPhones.id))
    .all();
  return rows.map(toMyPhone);
}

/**
 * The caller confirms phone `phoneId` as theirs: from now on calls from it
 * carry the trust others gave them, and a trust request sent to the number
 * reaches them. The number's caller record is rewritten in the same batch's
 * index work. Confirming again changes nothing; another person's phone is a
 * 404; a number another person confirmed is a 409 (naming no one).
 */
export async function confirmMyPhone(deps: Deps, personId: number, phoneId: number): Promise<MyPhone> {
  const mine = and(eq(personPhones.id, phoneId), eq(personPhones.personId, personId));
  const row = await deps.db.select(columns).from(personPhones).where(mine).get();
  if (!row) throw notFound(`phone ${phoneId} does not exist`);
  if (row.confirmed) return toMyPhone(row);
  const taken = () => conflict(`${row.e164} is confirmed by another person; ask them to remove it first`);
  const other = await deps.db
    .select({ id: personPhones.id })
    .from(personPhones)
    .where(and(eq(personPhones.e164, row.e164), eq(personPhones.confirmed, true)))
    .get();
  if (other) throw taken();
  const batch = new WriteBatch(deps);
  batch.add(deps.db.update(personPhones).set({ confirmed: true }).where(mine));
  batch.reindexNumbers([row.e164]);
  try {
    await batch.commit();
  } catch (err) {
    // Two people confirming one number at once: the unique index lets one win.
    if (errorText(err).includes("UNIQUE constraint failed: person_phones.e164")) throw taken();
    throw err;
  }
  return toMyPhone({ ...row, confirmed: true });
}
