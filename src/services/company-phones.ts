import { and, asc, eq } from "drizzle-orm";
import type { Db } from "../db/client";
import { companyPhones } from "../db/schema";
import { conflict, notFound } from "../lib/errors";
import type { Phone } from "../lib/phone";
import { type Deps, WriteBatch } from "./outbox";

/** A company phone on the wire (the OpenAPI document's CompanyPhone). */
export type CompanyPhone = {
  id: number;
  country_code: string;
  phone_number: string;
  phone_full: string;
  label: string | null;
};

const columns = {
  id: companyPhones.id,
  countryCode: companyPhones.countryCode,
  phoneNumber: companyPhones.phoneNumber,
  e164: companyPhones.e164,
  label: companyPhones.label,
};

type CompanyPhoneRow = { id: number; countryCode: string; phoneNumber: string; e164: string; label: string | null };

const toCompanyPhone = (row: CompanyPhoneRow): CompanyPhone => ({
  id: row.id,
  country_code: row.countryCode,
  phone_number: row.phoneNumber,
  phone_full: row.e164,
  label: row.label,
});

/** The numbers a company calls from, oldest first. */
export async function listCompanyPhones(db: Db, companyId: number): Promise<CompanyPhone[]> {
  const rows = await db
    .select(columns)
    .from(companyPhones)
    .where(eq(companyPhones.companyId, companyId))
    .orderBy(asc(companyPhones.id))
    .all();
  return rows.map(toCompanyPhone);
}

/**
 * Adds a number the company calls from: its members' secure numbers trust
 * calls from it from the next lookup on. The same number twice → 409.
 */
export async function addCompanyPhone(
  deps: Deps,
  companyId: number,
  phone: Phone,
  label: string | null,
): Promise<CompanyPhone> {
  const batch = new WriteBatch(deps);
  const insert = batch.add(
    deps.db
      .insert(companyPhones)
      .values({ companyId, countryCode: phone.countryCode, phoneNumber: phone.nationalNumber, e164: phone.e164, label })
      .onConflictDoNothing()
      .returning(columns),
  );
  batch.reindexNumbers([phone.e164]);
  const { results } = await batch.commit();
  const [row] = results[insert] as CompanyPhoneRow[];
  if (!row) throw conflict(`${phone.e164} is already one of company ${companyId}'s phones`);
  return toCompanyPhone(row);
}

/** Removes a company phone; calls from it are no longer trusted for that reason. */
export async function removeCompanyPhone(deps: Deps, companyId: number, phoneId: number): Promise<void> {
  const where = and(eq(companyPhones.id, phoneId), eq(companyPhones.companyId, companyId));
  const existing = await deps.db.select({ e164: companyPhones.e164 }).from(companyPhones).where(where).get();
  if (!existing) throw notFound(`company phone ${phoneId} does not exist`);
  const batch = new WriteBatch(deps);
  batch.add(deps.db.delete(companyPhones).where(where));
  batch.reindexNumbers([existing.e164]);
  await batch.commit();
}
