import { and, asc, eq } from "drizzle-orm";
import { alias } from "drizzle-orm/sqlite-core";
import { companies, consentContainers, containerVendors } from "../db/schema";
import { accepted, refusal, type Answer } from "../lib/answer";
import { notFound } from "../lib/errors";
import { type TrustSetting, writeCompanyTrust } from "./company-trust";
import type { Deps } from "./deps";

const vendors = alias(companies, "vendors");

/** An enabled publisher container by its public id (the publisher's slug), or null. */
export async function findEnabledContainer({ db }: Deps, slug: string) {
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

type Container = NonNullable<Awaited<ReturnType<typeof findEnabledContainer>>>;

/** `findEnabledContainer`, where its absence refuses: a 404 naming the container. */
export async function enabledContainer(deps: Deps, slug: string): Promise<Answer<{ container: Container }>> {
  const container = await findEnabledContainer(deps, slug);
  return container
    ? { ok: true, container }
    : refusal(404, `container ${JSON.stringify(slug)} does not exist or is disabled`);
}

/**
 * The container's vendors in the publisher's order, with the person's trust
 * setting for each (null without a person or without a setting): the
 * vendors from D1 and the settings from the person's object, read together.
 */
export async function containerVendorsFor(deps: Deps, containerId: number, personId: number | null) {
  const [rows, settings] = await Promise.all([
    deps.db
      .select({
        id: vendors.id,
        slug: vendors.slug,
        name: vendors.name,
        logo: vendors.logo,
        category: containerVendors.category,
        profileUrl: vendors.profileUrl,
      })
      .from(containerVendors)
      .innerJoin(vendors, eq(vendors.id, containerVendors.vendorId))
      // A vendor the operator disabled vouches for nothing: no container shows it until it is enabled again.
      .where(and(eq(containerVendors.containerId, containerId), eq(vendors.status, "enabled")))
      .orderBy(asc(containerVendors.position), asc(vendors.id))
      .all(),
    personId === null ? [] : deps.objects.of(personId).companySettings(),
  ]);
  const trustOf = new Map(settings.map((row) => [row.companyId, row.trust]));
  return rows.map((row) => ({
    slug: row.slug,
    name: row.name,
    logo: row.logo ?? "",
    category: row.category,
    profile_url: row.profileUrl ?? "",
    trust: trustOf.get(row.id) ?? null,
  }));
}

/**
 * The container's vendor `vendorSlug`, or null when the container does not
 * list it (a vendor of another container is not this one's) or the operator disabled it.
 */
export async function findContainerVendor({ db }: Deps, containerId: number, vendorSlug: string) {
  return db
    .select({ id: vendors.id, slug: vendors.slug })
    .from(containerVendors)
    .innerJoin(vendors, eq(vendors.id, containerVendors.vendorId))
    .where(
      and(eq(containerVendors.containerId, containerId), eq(vendors.slug, vendorSlug), eq(vendors.status, "enabled")),
    )
    .get();
}

/**
 * A visitor's trust in one of a container's vendors (docs/consent.md). It is
 * the person's trust in that company, the same setting `PUT
 * /contacts/companies/{id}/trust` writes. Unknown or disabled container, or a
 * vendor not in it → 404.
 */
export async function setVendorTrust(
  deps: Deps,
  personId: number,
  containerSlug: string,
  vendorSlug: string,
  trust: TrustSetting,
): Promise<{ slug: string; trust: TrustSetting }> {
  const { container } = accepted(await enabledContainer(deps, containerSlug));
  const vendor = await findContainerVendor(deps, container.containerId, vendorSlug);
  if (!vendor)
    throw notFound(`vendor ${JSON.stringify(vendorSlug)} is not in container ${JSON.stringify(containerSlug)}`);
  await writeCompanyTrust(deps, personId, vendor.id, trust);
  return { slug: vendor.slug, trust };
}

/**
 * Whether a page on `origin` is the publisher's: its host is the publisher's
 * domain or a subdomain of it, over https (plain http too in development,
 * docs/consent.md, "Security model"). Used for the CORS grant and the frame's
 * postMessage target.
 */
export function originAllowed(origin: string | undefined, domain: string | null, development = false): boolean {
  if (!origin || !domain) return false;
  let url: URL;
  try {
    url = new URL(origin);
  } catch {
    return false;
  }
  if (url.protocol !== "https:" && !(development && url.protocol === "http:")) return false;
  if (url.origin !== origin) return false; // an Origin header is exactly scheme://host[:port]
  const host = url.hostname.toLowerCase();
  const publisher = domain.toLowerCase();
  return host === publisher || host.endsWith(`.${publisher}`);
}

/**
 * The CSP `frame-ancestors` sources for a publisher: its domain and its
 * subdomains, on any port (as the CORS grant: the host decides, and a host
 * source without a port would match only the default one).
 */
export function publisherFrameAncestors(domain: string, development = false): string {
  const schemes = development ? ["https", "http"] : ["https"];
  return schemes.flatMap((scheme) => [`${scheme}://${domain}:*`, `${scheme}://*.${domain}:*`]).join(" ");
}
