import { and, asc, eq, exists, isNotNull, or, sql } from "drizzle-orm";
import type { Db } from "../db/client";
import { companies, companyPhones, companyTrust, memberships } from "../db/schema";
import { notFound } from "../lib/errors";
import { companyRefColumns, toCompanyRef, type CompanyRef } from "./companies";
import { type Deps, WriteBatch } from "./outbox";

/**
 * A person's trust in a company: whether its phones may ring them, and, for a
 * vendor, what the consent container reports (one setting, docs/decisions.md).
 * `negative` overrides membership; null means no setting (membership rules).
 */
export type TrustSetting = "trusted" | "negative" | null;

export type CompanyTrustEntry = { company: CompanyRef; trust: TrustSetting; member: boolean };

/** Every company the person belongs to or has a setting for, by company id. */
export async function listCompanyTrust(db: Db, personId: number): Promise<CompanyTrustEntry[]> {
  const rows = await db
    .select({ ...companyRefColumns, trust: companyTrust.trust, membershipId: memberships.id })
    .from(companies)
    .leftJoin(companyTrust, and(eq(companyTrust.companyId, companies.id), eq(companyTrust.personId, personId)))
    .leftJoin(memberships, and(eq(memberships.companyId, companies.id), eq(memberships.personId, personId)))
    .where(or(isNotNull(companyTrust.personId), isNotNull(memberships.id)))
    .orderBy(asc(companies.id))
    .all();
  return rows.map((row) => ({
    company: toCompanyRef(row),
    trust: row.trust ?? null,
    member: row.membershipId !== null,
  }));
}

/**
 * Sets (or with null, removes) the person's trust in a company they can see
 * (docs/security.md, "Which companies a person can see"): one they belong to,
 * one they already have a setting for, or a verified caller (a company with a
 * verified phone). Any other id is 404 with the same message as an id that
 * does not exist, so company ids cannot be probed through this route.
 */
export async function setCompanyTrust(deps: Deps, personId: number, companyId: number, trust: TrustSetting) {
  const { db } = deps;
  const visible = await db
    .select({ id: companies.id })
    .from(companies)
    .where(
      and(
        eq(companies.id, companyId),
        or(
          exists(
            db
              .select({ one: sql`1` })
              .from(memberships)
              .where(and(eq(memberships.companyId, companies.id), eq(memberships.personId, personId))),
          ),
          exists(
            db
              .select({ one: sql`1` })
              .from(companyTrust)
              .where(and(eq(companyTrust.companyId, companies.id), eq(companyTrust.personId, personId))),
          ),
          exists(
            db
              .select({ one: sql`1` })
              .from(companyPhones)
              .where(and(eq(companyPhones.companyId, companies.id), eq(companyPhones.status, "verified"))),
          ),
        ),
      ),
    )
    .get();
  if (!visible) throw notFound(`company ${companyId} does not exist`);
  await writeCompanyTrust(deps, personId, companyId, trust);
}

/**
 * The write itself, for callers that already know the company exists (the
 * consent container checks the vendor is in the container). The person's
 * trusted-number set follows in the same commit.
 */
export async function writeCompanyTrust(deps: Deps, personId: number, companyId: number, trust: TrustSetting) {
  const { db } = deps;
  const batch = new WriteBatch(deps);
  const key = and(eq(companyTrust.personId, personId), eq(companyTrust.companyId, companyId));
  if (trust === null) {
    batch.add(db.delete(companyTrust).where(key));
  } else {
    batch.add(
      db
        .insert(companyTrust)
        .values({ personId, companyId, trust })
        .onConflictDoUpdate({
          target: [companyTrust.personId, companyTrust.companyId],
          set: { trust, updatedAt: new Date() },
          // Setting the value it already has changes nothing (updated_at feeds the heartbeat).
          setWhere: sql`${companyTrust.trust} <> excluded.trust`,
        }),
    );
  }
  batch.reindexReceiver(personId);
  await batch.commit();
}
