import { and, asc, count, eq, sql, type SQL, type SQLWrapper } from "drizzle-orm";
import { pageWindow, type Page } from "../lib/pagination";
import type { Db } from "../db/client";
import { pruneOlderThan } from "../db/prune";
import { batchableAll } from "../db/sql";
import { companyPhones, personPhones, secureNumbers, type CompanyPhoneStatus } from "../db/schema";
import { badRequest, conflict, notFound } from "../lib/errors";
import type { Phone } from "../lib/phone";
import { WriteBatch } from "./outbox";
import type { Deps } from "./deps";

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

/** The numbers a company calls from, oldest first (its expired claims are not listed; refused ones are, until pruned). */
export async function listCompanyPhones({ db }: Deps, companyId: number): Promise<CompanyPhone[]> {
  const rows = await db
    .select(columns)
    .from(companyPhones)
    .where(and(eq(companyPhones.companyId, companyId), shown(new Date())))
    .orderBy(asc(companyPhones.id))
    .all();
  return rows.map(toCompanyPhone);
}

/** Pending claims one company may hold at a time (docs/decisions.md, "Company phones"). */
export const MAX_PENDING_CLAIMS = 20;
/** Days a claim lives unverified: a pending one has then expired, and the daily cron prunes it (or a refused one). */
export const CLAIM_DAYS = 30;

/** Claims made before this instant and not verified have expired. */
export const claimCutoff = (now: Date) => now.getTime() - CLAIM_DAYS * 24 * 3600_000;

/** A phone still shown: anything but a pending claim past its 30 days (which counts for nothing). */
const shown = (now: Date) =>
  sql`(${companyPhones.status} <> 'pending' or ${companyPhones.createdAt} >= ${claimCutoff(now)})`;

/**
 * Claims a number the company calls from, `pending` until the platform
 * operator verifies it (verifyCompanyPhone): only then do its members'
 * secure numbers trust it. Several companies may claim one number; the first
 * verified wins. The same number twice in one company → 409; a number
 * another company's phone is verified for → 409 naming no company
 * (docs/security.md); a company with 20 claims pending → 400. This
 * company's expired or refused claim of the number is replaced. Nothing is
 * indexed: a pending phone changes no trust answer.
 */
/**
 * Whether `e164` is a person's (docs/security.md, "Company claims"): one of the platform's secure numbers,
 * assigned or not, or a phone a person proved. A company never claims such a number.
 */
const personal = (e164: SQLWrapper | string) =>
  sql`(exists (select 1 from ${secureNumbers} s where s.e164 = ${e164})
       or exists (select 1 from ${personPhones} pp where pp.e164 = ${e164} and pp.confirmed = 1))`;

export const BELONGS_TO_A_PERSON = "this number belongs to a person";

export async function addCompanyPhone(
  deps: Deps,
  companyId: number,
  phone: Phone,
  label: string | null,
): Promise<CompanyPhone> {
  const batch = new WriteBatch(deps);
  const { now } = batch;
  // Checked inside each statement, so racing claims cannot pass the checks together, and a
  // refused claim writes nothing.
  const claimable = sql`not exists (select 1 from ${companyPhones} v where v.e164 = ${phone.e164} and v.status = 'verified')
    and not ${personal(phone.e164)}
    and (select count(*) from ${companyPhones} p where p.company_id = ${companyId} and p.status = 'pending'
         and p.created_at >= ${claimCutoff(now)}) < ${MAX_PENDING_CLAIMS}`;
  batch.add(
    deps.db.delete(companyPhones).where(
      sql`${companyPhones.companyId} = ${companyId} and ${companyPhones.e164} = ${phone.e164}
            and (${companyPhones.status} = 'refused' or not ${shown(now)}) and ${claimable}`,
    ),
  );
  const insert = batch.add(
    batchableAll<CompanyPhoneRow>(
      deps.db,
      sql`insert into ${companyPhones} (company_id, country_code, phone_number, e164, label, status, created_at)
          select ${companyId}, ${phone.countryCode}, ${phone.nationalNumber}, ${phone.e164}, ${label}, 'pending', ${now.getTime()}
          where ${claimable}
          on conflict do nothing
          returning id, country_code as countryCode, phone_number as phoneNumber, e164, label, status`,
    ),
  );
  const { results } = await batch.commit();
  const [row] = results[insert] as CompanyPhoneRow[];
  if (row) return toCompanyPhone(row);
  throw await refusedClaim(deps.db, companyId, phone.e164, now);
}

/** Why a claim was not inserted: the same number in this company, verified by another, or the cap. */
async function refusedClaim(db: Db, companyId: number, e164: string, now: Date) {
  const [own, verified, pending, person] = await db.batch([
    db
      .select({ id: companyPhones.id })
      .from(companyPhones)
      // A phone of the company's own still in use: not one the operator refused, nor a claim that expired.
      .where(
        and(
          eq(companyPhones.companyId, companyId),
          eq(companyPhones.e164, e164),
          sql`${companyPhones.status} <> 'refused' and ${shown(now)}`,
        ),
      ),
    db
      .select({ id: companyPhones.id })
      .from(companyPhones)
      .where(and(eq(companyPhones.e164, e164), eq(companyPhones.status, "verified"))),
    db
      .select({ n: count() })
      .from(companyPhones)
      .where(and(eq(companyPhones.companyId, companyId), eq(companyPhones.status, "pending"), shown(now))),
    db
      .select({ yes: sql<number>`1` })
      .from(sql`(select 1)`)
      .where(personal(e164)),
  ]);
  if (person.length > 0) return conflict(BELONGS_TO_A_PERSON);
  if (own.length > 0) return conflict(`${e164} is already one of this company's phones`);
  if (verified.length > 0) return conflict(`${e164} is already registered as a company phone`);
  if ((pending[0]?.n ?? 0) >= MAX_PENDING_CLAIMS)
    return badRequest(
      `this company already has ${MAX_PENDING_CLAIMS} phones waiting for verification, the most it may have; ` +
        `remove one, or wait for the operator (a claim expires after ${CLAIM_DAYS} days)`,
    );
  // Another request changed this company's claim of the number meanwhile.
  return conflict(`${e164} changed while it was being added; try again`);
}

/** A phone with its company, as the operator sees it; 404 when unknown or an expired claim. */
async function findShownPhone(db: Db, phoneId: number, now: Date) {
  const existing = await db
    .select({ ...columns, companyId: companyPhones.companyId, personal: sql<number>`${personal(companyPhones.e164)}` })
    .from(companyPhones)
    .where(and(eq(companyPhones.id, phoneId), shown(now)))
    .get();
  if (!existing) throw notFound(`company phone ${phoneId} does not exist (or was a claim that expired)`);
  return existing;
}

/**
 * The platform operator confirms that the phone's company really calls from
 * it: from the next lookup on, calls from it are trusted by the company's
 * members (and whoever trusts the company) and call-lookup names the company.
 * The first company verified on a number wins: the other pending claims on
 * the number are refused in the same batch, and verifying a refused claim,
 * or one on a number another company's phone is verified for, → 409.
 * Verifying a verified phone changes nothing. Unknown id, or an expired
 * claim → 404.
 */
export async function verifyCompanyPhone(deps: Deps, phoneId: number): Promise<CompanyPhone & { company_id: number }> {
  const batch = new WriteBatch(deps);
  const existing = await findShownPhone(deps.db, phoneId, batch.now);
  const taken = conflict(`${existing.e164} is already verified as another company's phone; this claim is refused`);
  if (existing.status === "refused") throw taken;
  if (existing.status === "pending" && existing.personal) throw conflict(`${BELONGS_TO_A_PERSON}; reject this claim`);
  if (existing.status === "pending") {
    const verify = batch.add(
      deps.db
        .update(companyPhones)
        .set({ status: "verified" })
        .where(
          sql`${companyPhones.id} = ${phoneId} and ${companyPhones.status} = 'pending' and ${shown(batch.now)}
              and not exists (select 1 from ${companyPhones} v where v.e164 = ${existing.e164} and v.status = 'verified')
              and not ${personal(existing.e164)}`,
        )
        .returning({ id: companyPhones.id }),
    );
    batch.add(
      deps.db
        .update(companyPhones)
        .set({ status: "refused" })
        .where(
          // Expired claims count for nothing and stay unlisted: only claims still shown become `refused`.
          sql`${companyPhones.e164} = ${existing.e164} and ${companyPhones.status} = 'pending' and ${shown(batch.now)}
              and exists (select 1 from ${companyPhones} v where v.e164 = ${existing.e164} and v.status = 'verified')`,
        ),
    );
    batch.markStaleNumbers([existing.e164]);
    const { results } = await batch.commit();
    // Another company's claim on the number was verified first (this one is refused now), or a
    // concurrent request verified or rejected this one: read which.
    if ((results[verify] as unknown[]).length === 0) {
      const now = await findShownPhone(deps.db, phoneId, batch.now);
      if (now.status !== "verified") throw taken;
    }
  }
  return { ...toCompanyPhone({ ...existing, status: "verified" }), company_id: existing.companyId };
}

/**
 * The operator refuses a pending claim: it stays listed to its company as
 * `refused` until pruned, counts for nothing, and the company may claim the
 * number again. Rejecting a refused claim changes nothing; a verified phone
 * → 409 (remove it instead); unknown, or an expired claim → 404.
 */
export async function rejectCompanyPhone(deps: Deps, phoneId: number): Promise<void> {
  const batch = new WriteBatch(deps);
  const existing = await findShownPhone(deps.db, phoneId, batch.now);
  const verified = conflict(
    `company phone ${phoneId} is verified; remove it with DELETE /internal/company-phones/${phoneId}`,
  );
  if (existing.status === "verified") throw verified;
  const reject = batch.add(
    deps.db
      .update(companyPhones)
      .set({ status: "refused" })
      .where(sql`${companyPhones.id} = ${phoneId} and ${companyPhones.status} <> 'verified' and ${shown(batch.now)}`)
      .returning({ id: companyPhones.id }),
  );
  const { results } = await batch.commit();
  // Verified (409) or expired (404) between the read and the update: read which.
  if ((results[reject] as unknown[]).length === 0) {
    if ((await findShownPhone(deps.db, phoneId, batch.now)).status === "verified") throw verified;
  }
}

/**
 * The operator removes a phone of any company (verified, pending or
 * refused): calls from the number stop counting for its company from the
 * next lookup on — its `num:` record is rewritten right after the commit.
 */
export async function removePhoneOfAnyCompany(deps: Deps, phoneId: number): Promise<void> {
  await removePhone(deps, phoneId, eq(companyPhones.id, phoneId));
}

/** Deletes the phone `where` selects (404 naming `phoneId` when none) and rewrites its number's `num:` record. */
async function removePhone(deps: Deps, phoneId: number, where: SQL | undefined): Promise<void> {
  const existing = await deps.db.select({ e164: companyPhones.e164 }).from(companyPhones).where(where).get();
  if (!existing) throw notFound(`company phone ${phoneId} does not exist`);
  const batch = new WriteBatch(deps);
  batch.add(deps.db.delete(companyPhones).where(where));
  batch.markStaleNumbers([existing.e164]);
  await batch.commit();
}

/**
 * Deletes claims made 30 days ago and never verified (expired, or refused):
 * the daily cron, in bounded chunks through the index of unverified claims.
 */
export const pruneExpiredClaims = (db: Db, now: Date, maxStatements: number) =>
  pruneOlderThan(db, {
    table: companyPhones,
    column: companyPhones.createdAt,
    cutoff: new Date(claimCutoff(now)),
    // A literal, not a bound value, so SQLite can use the partial index.
    where: sql`${companyPhones.status} <> 'verified'`,
    maxStatements,
  });

/**
 * Phones of every company in one status, oldest first, one page, with the
 * total (the operator's review queue). Expired claims are not listed.
 */
export async function listPhonesByStatus({ db }: Deps, status: CompanyPhoneStatus, page: Page) {
  const { limit, offset } = pageWindow(page);
  const where = and(eq(companyPhones.status, status), shown(new Date()));
  const [rows, totals] = await db.batch([
    db
      .select({
        ...columns,
        companyId: companyPhones.companyId,
        personal: sql<number>`${personal(companyPhones.e164)}`,
      })
      .from(companyPhones)
      .where(where)
      .orderBy(asc(companyPhones.id))
      .limit(limit)
      .offset(offset),
    db.select({ total: count() }).from(companyPhones).where(where),
  ]);
  return {
    phones: rows.map((row) => ({
      ...toCompanyPhone(row),
      company_id: row.companyId,
      belongs_to_person: Boolean(row.personal),
    })),
    total: totals[0]?.total ?? 0,
  };
}

/** Removes a company phone; calls from it are no longer trusted for that reason. */
export async function removeCompanyPhone(deps: Deps, companyId: number, phoneId: number): Promise<void> {
  await removePhone(deps, phoneId, and(eq(companyPhones.id, phoneId), eq(companyPhones.companyId, companyId)));
}
