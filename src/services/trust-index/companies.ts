import { sql } from "drizzle-orm";
import type { Db } from "../../db/client";
import { companies, companyRosters } from "../../db/schema";
import { inList } from "../../db/sql";
import { KEY_KINDS, keysOfKind } from "../../domain/key-kinds";
import { companyKey, type CompanyRecord } from "../../domain/company-records";

/**
 * The `co:` records of `keys` as D1 has them now (domain/company-records.ts:
 * the heartbeat's company and roster times), in one read; a company that no
 * longer exists maps to null (its key is deleted).
 */
export async function computeCompanyRecords(db: Db, keys: string[]): Promise<Map<string, string | null>> {
  const own = keysOfKind(keys, "co");
  if (own.length === 0) return new Map();
  const rows = await db
    .select({
      id: companies.id,
      u: companies.updatedAt,
      f: companyRosters.firstPersonId,
      a: companyRosters.firstAt,
      b: companyRosters.secondAt,
    })
    .from(companies)
    .leftJoin(companyRosters, sql`${companyRosters.companyId} = ${companies.id}`)
    .where(inList(companies.id, own.map(KEY_KINDS.co.parse)))
    .all();
  const records = new Map<string, string | null>(own.map((key) => [key, null]));
  for (const row of rows) {
    const record: CompanyRecord = { u: row.u.getTime(), f: row.f, a: row.a, b: row.b };
    records.set(companyKey(row.id), JSON.stringify(record));
  }
  return records;
}
