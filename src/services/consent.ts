import { and, asc, eq } from "drizzle-orm";
import { alias } from "drizzle-orm/sqlite-core";
import type { Db } from "../db/client";
import { companies, companyTrust, consentContainers, containerVendors } from "../db/schema";

const vendors = alias(companies, "vendors");

/** An enabled publisher container by its public id (the publisher's slug), or null. */
export async function findEnabledContainer(db: Db, slug: string) {
  return db
    .select({
      containerId: consentContainers.id,
      slug: companies.slug,
      name: companies.name,
      domain: companies.domain,
      logo: companies.logo,
    })
    .from(companies)
    .innerJoin(consentContainers, eq(consentContainers.publisherId, companies.id))
    .where(
      and(
        eq(companies.slug, slug),
        eq(companies.kind, "publisher"),
        eq(companies.status, "enabled"),
        eq(consentContainers.enabled, true),
      ),
    )
    .get();
}

/**
 * The container's vendors in the publisher's order, with the person's trust
 * setting for each (null without a person or without a setting).
 */
export async function containerVendorsFor(db: Db, containerId: number, personId: number | null) {
  const rows = await db
    .select({
      slug: vendors.slug,
      name: vendors.name,
      logo: vendors.logo,
      category: containerVendors.category,
      profileUrl: vendors.profileUrl,
      trust: companyTrust.trust,
    })
    .from(containerVendors)
    .innerJoin(vendors, eq(vendors.id, containerVendors.vendorId))
    .leftJoin(companyTrust, and(eq(companyTrust.companyId, vendors.id), eq(companyTrust.personId, personId ?? -1)))
    .where(eq(containerVendors.containerId, containerId))
    .orderBy(asc(containerVendors.position), asc(vendors.id))
    .all();
  return rows.map((row) => ({
    slug: row.slug,
    name: row.name,
    logo: row.logo ?? "",
    category: row.category,
    profile_url: row.profileUrl ?? "",
    trust: personId === null ? null : (row.trust ?? null),
  }));
}

/**
 * CORS for a credentialed fetch from a publisher page (DECISIONS §7): only
 * the publisher's domain or one of its subdomains is granted.
 */
export function originAllowed(origin: string | undefined, domain: string | null): boolean {
  if (!origin || !domain) return false;
  let host: string;
  try {
    const url = new URL(origin);
    if (url.protocol !== "https:" && url.protocol !== "http:") return false;
    host = url.hostname.toLowerCase();
  } catch {
    return false;
  }
  const publisher = domain.toLowerCase();
  return host === publisher || host.endsWith(`.${publisher}`);
}
