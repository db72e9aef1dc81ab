import { and, asc, count, eq } from "drizzle-orm";
import { pageWindow, type Page } from "../lib/pagination";
import type { Db } from "../db/client";
import { companyPhones, type CompanyPhoneStatus } from "../db/schema";
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
  status: CompanyPhoneStatus;
};

const columns = {
  id: companyPhones.id,
  countryCode: companyPhones.countryCode,
  phoneNumber: companyPhones.phoneNumber,
  e164: companyPhones.e164,
  label: companyPhones.label,
  status: companyPhones.status,
};

type CompanyPhoneRow = {
  id: number;
  countryCode: string;
  phoneNumber: string;
  e164: string;
  label: string | null;
  status: CompanyPhoneStatus;
};

const toCompanyPhone = (row: CompanyPhoneRow): CompanyPhone => ({
  id: row.id,
  country_code: row.countryCode,
  phone_number: row.phoneNumber,
  phone_full: row.e164,
  label: row.label,
  status: row.status,
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
 * Adds a number the company calls from, `pending` until the platform operator
 * verifies it (verifyCompanyPhone): only then do its members' secure numbers
 * trust it. A number belongs to at most one company: a number this or any
 * other company holds → 409, a message that names no company (docs/security.md).
 * Nothing is indexed yet: a pending phone changes no trust answer.
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
  const { results } = await batch.commit();
  const [row] = results[insert] as CompanyPhoneRow[];
  if (!row) throw conflict(`${phone.e164} is already registered as a company phone`);
  return toCompanyPhone(row);
}

/**
 * The platform operator confirms that the phone's company really calls from
 * it: from the next lookup on, calls from it are trusted by the company's
 * members (and whoever trusts the company) and call-lookup names the company.
 * Verifying a verified phone changes nothing. Unknown id → 404.
 */
export async function verifyCompanyPhone(deps: Deps, phoneId: number): Promise<CompanyPhone & { company_id: number }> {
  const where = eq(companyPhones.id, phoneId);
  const existing = await deps.db
    .select({ ...columns, companyId: companyPhones.companyId })
    .from(companyPhones)
    .where(where)
    .get();
  if (!existing) throw notFound(`company phone ${phoneId} does not exist`);
  if (existing.status !== "verified") {
    const batch = new WriteBatch(deps);
    batch.add(deps.db.update(companyPhones).set({ status: "verified" }).where(where));
    batch.reindexNumbers([existing.e164]);
    await batch.commit();
  }
  return { ...toCompanyPhone({ ...existing, status: "verified" }), company_id: existing.companyId };
}

/** Phones of every company in one status, oldest first, one page, with the total (the operator's review queue). */
export async function listPhonesByStatus(db: Db, status: CompanyPhoneStatus, page: Page) {
  const { limit, offset } = pageWindow(page);
  const where = eq(companyPhones.status, status);
  const [rows, totals] = await db.batch([
    db
      .select({ ...columns, companyId: companyPhones.companyId })
      .from(companyPhones)
      .where(where)
      .orderBy(asc(companyPhones.id))
      .limit(limit)
      .offset(offset),
    db.select({ total: count() }).from(companyPhones).where(where),
  ]);
  return {
    phones: rows.map((row) => ({ ...toCompanyPhone(row), company_id: row.companyId })),
    total: totals[0]?.total ?? 0,
  };
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
