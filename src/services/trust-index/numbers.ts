import { sql } from "drizzle-orm";
import type { Db } from "../../db/client";
import { companyPhones, personPhones, secureNumbers } from "../../db/schema";
import { inList } from "../../db/sql";
import { KEY_KINDS, keysOfKind } from "../../domain/key-kinds";
import { NO_HOLDERS, numberKey, type NumberRecord } from "../../domain/trust-records";

/* The `num:` records (who calls from a number) as D1 has them: read by a lookup's miss and by the index work. */

/** The record of a number nobody calls from (its key is deleted: absent reads as nobody). */
export const EMPTY_NUMBER = JSON.stringify(NO_HOLDERS);
const enabledCompany = sql`${companyPhones.companyId} in (select id from companies where status = 'enabled')`;

/**
 * The `num:` records of `keys` as D1 has them now, in one batch of reads
 * whatever the number of keys (each list bound as one JSON value).
 */
export async function computeRecords(db: Db, keys: string[]): Promise<Map<string, string>> {
  const calling = keysOfKind(keys, "num").map(KEY_KINDS.num.parse);
  if (calling.length === 0) return new Map();
  const [phoneHolders, secureHolders, companyHolders] = await db.batch([
    db
      .selectDistinct({ e164: personPhones.e164, id: personPhones.personId })
      .from(personPhones)
      // Only a phone its holder confirmed carries the trust others gave them (docs/decisions.md).
      .where(sql`${inList(personPhones.e164, calling)} and ${personPhones.confirmed} = 1`),
    db
      .select({ e164: secureNumbers.e164, id: secureNumbers.personId })
      .from(secureNumbers)
      .where(sql`${inList(secureNumbers.e164, calling)} and ${secureNumbers.personId} is not null`),
    db
      .selectDistinct({ e164: companyPhones.e164, id: companyPhones.companyId })
      .from(companyPhones)
      // Only a phone the operator verified names its company, and only while that company is enabled (docs/decisions.md).
      .where(
        sql`${inList(companyPhones.e164, calling)} and ${companyPhones.status} = 'verified' and ${enabledCompany}`,
      ),
  ]);
  const sorted = (values: number[]) => [...new Set(values)].sort((a, b) => a - b);
  const records = new Map<string, string>();
  for (const e164 of calling) {
    const people = [...phoneHolders, ...secureHolders].filter((row) => row.e164 === e164).map((row) => row.id!);
    const record: NumberRecord = {
      p: sorted(people),
      c: sorted(companyHolders.filter((row) => row.e164 === e164).map((row) => row.id)),
    };
    records.set(numberKey(e164), JSON.stringify(record));
  }
  return records;
}
