import { and, eq, exists, or, sql } from "drizzle-orm";
import { companies, companyPhones, memberships } from "../db/schema";
import { inList } from "../db/sql";
import { notFound } from "../lib/errors";
import { companyRefColumns, toCompanyRef, type CompanyRef } from "./companies";
import type { Deps } from "./deps";
import { accepted } from "./person-objects";

/**
 * A person's trust in a company: whether its phones may ring them, and, for a
 * vendor, what the consent container reports (one setting, docs/decisions.md).
 * `negative` overrides membership; null means no setting (membership rules).
 * The settings live in the person's object; companies and memberships in D1.
 */
export type TrustSetting = "trusted" | "negative" | null;

export type CompanyTrustEntry = { company: CompanyRef; trust: TrustSetting; member: boolean };

/**
 * Every company the person belongs to or has a setting for, by company id:
 * the settings from their object and the companies from D1, read together.
 */
export async function listCompanyTrust(deps: Deps, personId: number): Promise<CompanyTrustEntry[]> {
  const settings = deps.objects.of(personId).companySettings();
  const [settingRows, memberRows] = await Promise.all([
    settings,
    deps.db
      .select({ ...companyRefColumns })
      .from(companies)
      .innerJoin(memberships, and(eq(memberships.companyId, companies.id), eq(memberships.personId, personId)))
      .all(),
  ]);
  const trustOf = new Map(settingRows.map((row) => [row.companyId, row.trust]));
  const memberIds = new Set(memberRows.map((row) => row.id));
  const others = settingRows.map((row) => row.companyId).filter((id) => !memberIds.has(id));
  // Settings for companies they do not belong to: the companies' rows, one more read only when there are any.
  const otherRows =
    others.length === 0
      ? []
      : await deps.db
          .select({ ...companyRefColumns })
          .from(companies)
          .where(inList(companies.id, others))
          .all();
  return [...memberRows, ...otherRows]
    .sort((a, b) => a.id - b.id)
    .map((row) => ({ company: toCompanyRef(row), trust: trustOf.get(row.id) ?? null, member: memberIds.has(row.id) }));
}

/**
 * Sets (or with null, removes) the person's trust in a company they can see
 * (docs/security.md, "Which companies a person can see"): one they belong to,
 * one they already have a setting for, or a verified caller (a company with a
 * verified phone). Any other id is 404 with the same message as an id that
 * does not exist, so company ids cannot be probed through this route. D1
 * says whether the company is a membership or a verified caller; the
 * person's object knows their settings, checks and writes.
 */
export async function setCompanyTrust(deps: Deps, personId: number, companyId: number, trust: TrustSetting) {
  const { db } = deps;
  const company = await db
    .select({
      id: companies.id,
      visible: sql<number>`${or(
        exists(
          db
            .select({ one: sql`1` })
            .from(memberships)
            .where(and(eq(memberships.companyId, companies.id), eq(memberships.personId, personId))),
        ),
        exists(
          db
            .select({ one: sql`1` })
            .from(companyPhones)
            .where(and(eq(companyPhones.companyId, companies.id), eq(companyPhones.status, "verified"))),
        ),
      )}`,
    })
    .from(companies)
    .where(eq(companies.id, companyId))
    .get();
  if (!company) throw notFound(`company ${companyId} does not exist`);
  await writeCompanyTrust(deps, personId, companyId, trust, Boolean(company.visible));
}

/**
 * The write itself, in the person's object: `visible` says D1 found the
 * company nameable (the consent container passes true: it checked the
 * vendor is in the container). The object rewrites the receiver record.
 */
export async function writeCompanyTrust(
  deps: Deps,
  personId: number,
  companyId: number,
  trust: TrustSetting,
  visible = true,
) {
  accepted(await deps.objects.write(personId, (person) => person.setCompanyTrust(companyId, trust, visible)));
}
