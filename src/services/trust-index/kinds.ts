import { sql, type SQL } from "drizzle-orm";
import type { Db } from "../../db/client";
import { KEY_KINDS, type D1KindName } from "../../domain/key-kinds";
import { computeTokenRecords } from "../token-records";
import { computeCompanyRecords } from "./companies";
import { computeEmailRecords, computeLinkCards } from "./contacts";
import { computeRecords, EMPTY_NUMBER } from "./numbers";

/*
 * How D1's index work computes each kind it writes: the half of the registry
 * (domain/key-kinds.ts) that reads D1. `makeCurrent` (./current.ts) and the
 * rebuild (services/index-rebuild.ts) loop over it; a kind the registry says
 * D1 writes and that has no entry here does not compile.
 */

/** Values of `keys` (those of its kind among them) as D1 has them now; null: the key should not exist. */
type Compute = (db: Db, keys: string[], now: Date) => Promise<Map<string, string | null>>;

export type RebuildStage = "numbers" | "companies";

export type D1Kind = {
  compute: Compute;
  /** Put even when the digest says KV holds the value (a `tok:` record: the token's own check may have put another). */
  force?: true;
  /** The rebuild stage that writes every key of the kind, and the SELECT of those keys (column `k`). */
  rebuild?: { stage: RebuildStage; keys: SQL };
};

const k = (name: D1KindName, column: string) => sql.raw(KEY_KINDS[name].sql(column));

export const D1_VALUES: { readonly [K in D1KindName]: D1Kind } = {
  num: {
    // Nobody calls from the number any more: the key goes (absent reads as "nobody").
    compute: async (db, keys) =>
      new Map(
        [...(await computeRecords(db, keys))].map(([key, value]) => [key, value === EMPTY_NUMBER ? null : value]),
      ),
    rebuild: {
      stage: "numbers",
      keys: sql`select ${k("num", "e164")} as k from person_phones where confirmed = 1
        union select ${k("num", "e164")} from secure_numbers where person_id is not null
        union select ${k("num", "p.e164")} from company_phones p join companies c on c.id = p.company_id
          where p.status = 'verified' and c.status = 'enabled'`,
    },
  },
  co: {
    compute: computeCompanyRecords,
    rebuild: { stage: "companies", keys: sql`select ${k("co", "id")} as k from companies` },
  },
  tok: { compute: computeTokenRecords, force: true },
  eml: {
    compute: computeEmailRecords,
    rebuild: { stage: "numbers", keys: sql`select ${k("eml", "email")} as k from person_emails` },
  },
  lnk: {
    compute: computeLinkCards,
    rebuild: { stage: "numbers", keys: sql`select ${k("lnk", "id")} as k from people` },
  },
};

/** The SELECT of every key a rebuild stage writes (column `k`, text), over the kinds it holds. */
export function rebuildKeys(stage: RebuildStage): SQL {
  const parts = Object.values(D1_VALUES).flatMap((kind) => (kind.rebuild?.stage === stage ? [kind.rebuild.keys] : []));
  return sql.join(parts, sql` union `);
}
