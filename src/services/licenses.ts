import { and, asc, eq, notExists, sql } from "drizzle-orm";
import { insertChunks } from "../db/batch";
import { inList } from "../db/sql";
import { companies, companySeats, licensePurchases, licenses, licenseSites, memberships } from "../db/schema";
import { refusal, type Answer } from "../lib/answer";
import { badRequest, conflict, notFound } from "../lib/errors";
import { companyColumns, toCompany } from "./companies";
import { WriteBatch } from "./outbox";
import type { Deps } from "./deps";
import { NO_SEATS, seatsByLicense } from "./seats";

export type LicenseRow = typeof licenses.$inferSelect;

/**
 * The API's License (OpenAPI component `License`; docs/decisions.md, "Licenses") as seen by one
 * company: the catalog entry with that company's seats.
 */
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
export async function licenseCatalog({ db }: Deps): Promise<LicenseRow[]> {
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

export async function findLicense(deps: Deps, ref: string): Promise<LicenseRow | null> {
  return matchLicense(await licenseCatalog(deps), ref);
}

/** Every license of the catalog with the company's seats and the sites each covers. */
export async function listCompanyLicenses(deps: Deps, companyId: number): Promise<License[]> {
  const { db } = deps;
  const [catalog, siteRows, seats] = await Promise.all([
    licenseCatalog(deps),
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

/** The company's view of license `ref` (its id or name), or a 404 refusal. */
export async function getCompanyLicense(
  deps: Deps,
  companyId: number,
  ref: string,
): Promise<Answer<{ license: License }>> {
  const found = await findLicense(deps, ref);
  const license = found && (await listCompanyLicenses(deps, companyId)).find((entry) => entry.id === found.id);
  return license ? { ok: true, license } : refusal(404, `license ${JSON.stringify(ref)} does not exist`);
}

/**
 * Adds seats (docs/decisions.md): every id must name a license, else 400 and
 * nothing is bought; the seat totals and the purchase records are written in
 * one batch. Quantities of a license named twice are added up.
 */
export async function purchaseLicenses(
  deps: Deps,
  companyId: number,
  purchasedBy: number,
  items: { id: string; quantity: number }[],
  now: Date,
) {
  const { db } = deps;
  const catalog = await licenseCatalog(deps);
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
  const batch = new WriteBatch(deps, now);
  for (const statement of [...upserts, ...records]) batch.add(statement);
  // The operator may retire a license between the catalog read and the batch (its FOREIGN KEY then
  // fails): a rollback is explained by reading the catalog again (db/guard.ts), never by the error's text.
  batch.explainRollback(async () => {
    const now = await licenseCatalog(deps);
    if ([...totals.keys()].some((id) => !now.some((license) => license.id === id))) {
      throw badRequest(
        `a license of this purchase was just retired from the catalog; nothing was bought, see GET /licenses`,
      );
    }
  });
  await batch.commit();
}

/** A catalog entry as the operator gives it (PUT /internal/licenses/{id}). */
export type CatalogEntry = {
  name: string;
  price: number;
  currency: string;
  full_scan: boolean;
  full_delete: boolean;
  /** Slugs of people-search sites. */
  sites: string[];
};

/**
 * PUT /internal/licenses/{id} (docs/decisions.md, "Licenses"): creates the
 * entry or replaces every field of it. Seats companies bought and the seats
 * their members hold stay as they are. Checks first (an unknown site slug is
 * a 400, a name another entry is known by a 409), then one batch: the entry,
 * and its sites replaced. Answers the License as a company without seats of it
 * sees it in GET /licenses.
 */
export async function putCatalogEntry(deps: Deps, id: string, entry: CatalogEntry): Promise<License> {
  const { db } = deps;
  const [catalog, siteRows] = await Promise.all([
    licenseCatalog(deps),
    entry.sites.length === 0
      ? []
      : db
          .select({ slug: companies.slug, ...companyColumns })
          .from(companies)
          .where(and(inList(companies.slug, entry.sites), eq(companies.kind, "site")))
          .orderBy(asc(companies.name), asc(companies.id))
          .all(),
  ]);
  const found = new Set(siteRows.map((row) => row.slug));
  const unknown = entry.sites.filter((slug) => !found.has(slug));
  if (unknown.length > 0) {
    throw badRequest(
      `invalid body: \`sites\`: there is no people-search site ${unknown.map((slug) => JSON.stringify(slug)).join(", ")}; ` +
        `create ${unknown.length > 1 ? "them" : "it"} first with kind \`site\` (npm run admin -- create-company site …)`,
    );
  }
  refuseNameClash(catalog, id, entry.name);

  const values = {
    name: entry.name,
    price: entry.price,
    currency: entry.currency,
    fullScan: entry.full_scan,
    fullDelete: entry.full_delete,
  };
  const batch = new WriteBatch(deps);
  batch.add(
    db
      .insert(licenses)
      .values({ id, ...values })
      .onConflictDoUpdate({ target: licenses.id, set: values }),
  );
  batch.add(db.delete(licenseSites).where(eq(licenseSites.licenseId, id)));
  const links = siteRows.map((site) => ({ licenseId: id, siteId: site.id }));
  for (const statement of insertChunks(db, licenseSites, links)) batch.add(statement);
  // Another PUT of the same name landing first fails this batch on the names' unique index: the catalog
  // read again says so (409), as the check above would have.
  batch.explainRollback(async () => refuseNameClash(await licenseCatalog(deps), id, entry.name));
  // The catalog is no trust-lookup input and no webhook event: no index work, no deliveries.
  await batch.commit();
  return {
    id,
    name: entry.name,
    price: entry.price,
    currency: entry.currency,
    ...NO_SEATS,
    full_scan: entry.full_scan,
    full_delete: entry.full_delete,
    sites: siteRows.map(toCompany),
  };
}

/** Licenses are also named by their name (matchLicense): a name must not be another entry's id or name (409). */
function refuseNameClash(catalog: { id: string; name: string }[], id: string, wanted: string) {
  const name = wanted.toLowerCase();
  const clash = catalog.find(
    (other) =>
      other.id !== id &&
      (other.name.toLowerCase() === name || other.id.toLowerCase() === name || other.name.toLowerCase() === id),
  );
  if (!clash) return;
  throw conflict(
    clash.name.toLowerCase() === id
      ? `the license \`${clash.id}\` is named ${JSON.stringify(clash.name)}, which would read as this id; choose another id`
      : `the license \`${clash.id}\` (${JSON.stringify(clash.name)}) is already known by the name ${JSON.stringify(wanted)}; choose another name`,
  );
}

/**
 * DELETE /internal/licenses/{id}: removes the entry (and the sites it covers)
 * unless a company holds seats of it. The condition is part of the delete,
 * so a purchase racing with it either lands first (409 here) or fails on the
 * missing license (400 to the buyer).
 */
export async function retireLicense(deps: Deps, id: string): Promise<void> {
  const { db } = deps;
  const held = db
    .select({ one: sql`1` })
    .from(companySeats)
    .where(eq(companySeats.licenseId, id));
  const batch = new WriteBatch(deps);
  const removal = batch.add(
    db
      .delete(licenses)
      .where(and(eq(licenses.id, id), notExists(held)))
      .returning({ id: licenses.id }),
  );
  const { results } = await batch.commit();
  if ((results[removal] as { id: string }[]).length > 0) return;

  const exists = await db.select({ id: licenses.id }).from(licenses).where(eq(licenses.id, id)).get();
  if (!exists) throw notFound(`license ${JSON.stringify(id)} is not in the catalog`);
  const [holders, assigned] = await db.batch([
    db
      .select({ companyId: companySeats.companyId, quantity: companySeats.quantity })
      .from(companySeats)
      .where(eq(companySeats.licenseId, id))
      .orderBy(asc(companySeats.companyId)),
    db
      .select({ n: sql<number>`count(*)` })
      .from(memberships)
      .where(eq(memberships.licenseId, id)),
  ]);
  const ids = holders.map((row) => row.companyId);
  const bought = holders.reduce((sum, row) => sum + row.quantity, 0);
  throw conflict(
    `license \`${id}\` is held: ${ids.length === 1 ? "company" : `${ids.length} companies`} ` +
      `${ids.slice(0, 10).join(", ")}${ids.length > 10 ? ", …" : ""} bought ${bought} seat${bought === 1 ? "" : "s"} ` +
      `(${assigned[0]?.n ?? 0} assigned); a license can be retired only while no company holds seats of it. ` +
      `Change it with PUT /internal/licenses/${id} instead`,
  );
}
