import { asc, eq, sql } from "drizzle-orm";
import type { Db } from "../db/client";
import { insertChunks } from "../db/batch";
import { companies, companySeats, licensePurchases, licenses, licenseSites } from "../db/schema";
import { badRequest } from "../lib/errors";
import { companyColumns, toCompany } from "./companies";
import { NO_SEATS, seatsByLicense } from "./seats";

export type LicenseRow = typeof licenses.$inferSelect;

/** The License of [seed 2.13] as seen by one company: the catalog entry with that company's seats. */
export type License = {
  id: string;
  name: string;
  price: number;
  currency: string;
  num_active: number;
  num_assigned: number;
  num_available: number;
  full_scan: boolean;
  full_delete: boolean;
  sites: ReturnType<typeof toCompany>[];
};

/** The whole catalog, cheapest first; it is a handful of rows. */
export async function licenseCatalog(db: Db): Promise<LicenseRow[]> {
  return db.select().from(licenses).orderBy(asc(licenses.price), asc(licenses.id)).all();
}

/** A license named by its id or its name, case-insensitively (docs/decisions.md); an id match wins. */
export function matchLicense(catalog: LicenseRow[], ref: string): LicenseRow | null {
  const value = ref.trim().toLowerCase();
  return (
    catalog.find((license) => license.id.toLowerCase() === value) ??
    catalog.find((license) => license.name.toLowerCase() === value) ??
    null
  );
}

export async function findLicense(db: Db, ref: string): Promise<LicenseRow | null> {
  return matchLicense(await licenseCatalog(db), ref);
}

/** Every license of the catalog with the company's seats and the sites each covers. */
export async function listCompanyLicenses(db: Db, companyId: number): Promise<License[]> {
  const [catalog, siteRows, seats] = await Promise.all([
    licenseCatalog(db),
    db
      .select({
        licenseId: licenseSites.licenseId,
        ...companyColumns,
      })
      .from(licenseSites)
      .innerJoin(companies, eq(companies.id, licenseSites.siteId))
      .orderBy(asc(companies.name), asc(companies.id))
      .all(),
    seatsByLicense(db, companyId),
  ]);
  return catalog.map((license) => ({
    id: license.id,
    name: license.name,
    price: license.price,
    currency: license.currency,
    ...(seats.get(license.id) ?? NO_SEATS),
    full_scan: license.fullScan,
    full_delete: license.fullDelete,
    sites: siteRows.filter((row) => row.licenseId === license.id).map(toCompany),
  }));
}

export async function getCompanyLicense(db: Db, companyId: number, ref: string): Promise<License | null> {
  const license = await findLicense(db, ref);
  if (!license) return null;
  return (await listCompanyLicenses(db, companyId)).find((entry) => entry.id === license.id) ?? null;
}

/**
 * Adds seats (docs/decisions.md): every id must name a license, else 400 and
 * nothing is bought; the seat totals and the purchase records are written in
 * one batch. Quantities of a license named twice are added up.
 */
export async function purchaseLicenses(
  db: Db,
  companyId: number,
  purchasedBy: number,
  items: { id: string; quantity: number }[],
  now: Date,
) {
  const catalog = await licenseCatalog(db);
  const unknown = items.filter((item) => !matchLicense(catalog, item.id)).map((item) => JSON.stringify(item.id));
  if (unknown.length > 0) {
    throw badRequest(
      `unknown license ${unknown.join(", ")}; the catalog has ${catalog.map((l) => `\`${l.id}\``).join(", ")}`,
    );
  }
  const totals = new Map<string, number>();
  for (const item of items) {
    const id = matchLicense(catalog, item.id)!.id;
    totals.set(id, (totals.get(id) ?? 0) + item.quantity);
  }
  const upserts = [...totals].map(([licenseId, quantity]) =>
    db
      .insert(companySeats)
      .values({ companyId, licenseId, quantity, updatedAt: now })
      .onConflictDoUpdate({
        target: [companySeats.companyId, companySeats.licenseId],
        set: { quantity: sql`${companySeats.quantity} + excluded.quantity`, updatedAt: now },
      }),
  );
  const records = insertChunks(
    db,
    licensePurchases,
    [...totals].map(([licenseId, quantity]) => ({ companyId, licenseId, quantity, purchasedBy, createdAt: now })),
  );
  const [first, ...rest] = [...upserts, ...records];
  await db.batch([first!, ...rest]);
}
