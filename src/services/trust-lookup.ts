import { and, asc, desc, eq, sql } from "drizzle-orm";
import type { Db } from "../db/client";
import { blockedCalls, companies, memberships, people, personTrust } from "../db/schema";
import { inList } from "../db/sql";
import { phoneFromParts } from "../lib/phone";
import { iso } from "../lib/time";
import { contactsWithPhone, type Contact } from "./contacts";
import { toCompanyRef, type CompanyRef } from "./companies";
import { displayName, e2eeColumn } from "./people";
import { decide, readRecords, type Defer, type IndexDeps } from "./trust-index";

/** The lookup parameters of [seed 4.1], as the provider sent them (any may be missing). */
export type LookupFields = {
  number_code?: string;
  number?: string;
  inbound_code?: string;
  inbound?: string;
  caller_id?: string;
};

export type BlockedCallInput = typeof blockedCalls.$inferInsert;

/** Raw input kept on a blocked call is clipped: it is whatever the provider sent. */
const clip = (value: string | undefined, max: number) => (value ?? "").trim().slice(0, max);

/**
 * trust-lookup [seed 4.1 rule 2, docs/decisions.md]: `user_id` is the member
 * holding the receiving number (0 when it is unparseable or nobody's);
 * `trusted` only when that member trusts the caller's number. Never throws
 * for its input. When a member matched and the answer is untrusted, the
 * blocked call to record is returned too. Warm, it is one round of KV reads
 * (the receiver's and the caller's records, together) and no D1.
 */
export async function lookupTrust(
  deps: IndexDeps,
  fields: LookupFields,
  defer: Defer,
): Promise<{ trusted: boolean; user_id: number; blocked: BlockedCallInput | null }> {
  const receiving = phoneFromParts(fields.number_code ?? "", fields.number ?? "");
  if (!receiving) return { trusted: false, user_id: 0, blocked: null };
  const caller = phoneFromParts(fields.inbound_code ?? "", fields.inbound ?? "");
  const records = await readRecords(deps, receiving.e164, caller?.e164 ?? null, defer);
  const receiverId = records.receiver.p;
  if (receiverId === 0) return { trusted: false, user_id: 0, blocked: null };
  const trusted = caller !== null && decide(records.receiver, caller.e164, records.caller);
  return {
    trusted,
    user_id: receiverId,
    blocked: trusted
      ? null
      : {
          personId: receiverId,
          callerId: clip(fields.caller_id, 64) || null,
          countryCode: caller?.countryCode ?? clip(fields.inbound_code ?? "", 8),
          phoneNumber: caller?.nationalNumber ?? clip(fields.inbound ?? "", 32),
        },
  };
}

export type CallDetails = {
  contacts: Contact[];
  people: CallerPerson[];
  companies: CompanyRef[];
};

export type CallerPerson = {
  id: number;
  first_name: string;
  middle_name: string | null;
  last_name: string;
  display_name: string;
  avatar: string;
  e2ee: boolean;
  e2e_id: string | null;
};

/**
 * call-lookup (docs/decisions.md): what the receiver may know about a trusted
 * caller. `asPerson` is set when a member asks with their own token: the
 * receiving number must then be their secure number, else null (404).
 * An untrusted or unmatched call gets three empty arrays. The decision
 * reuses the lookup's records (one KV round); then the details are read in
 * queries issued together.
 */
export async function lookupCall(
  deps: IndexDeps,
  fields: LookupFields,
  asPerson: number | null,
  defer: Defer,
): Promise<CallDetails | null> {
  const nothing: CallDetails = { contacts: [], people: [], companies: [] };
  const receiving = phoneFromParts(fields.number_code ?? "", fields.number ?? "");
  if (!receiving) return asPerson === null ? nothing : null;
  const caller = phoneFromParts(fields.inbound_code ?? "", fields.inbound ?? "");
  const { receiver, caller: holders } = await readRecords(deps, receiving.e164, caller?.e164 ?? null, defer);
  const receiverId = receiver.p === 0 ? null : receiver.p;
  if (asPerson !== null && receiverId !== asPerson) return null;
  if (receiverId === null || caller === null || !decide(receiver, caller.e164, holders)) return nothing;

  // The caller's companies the receiver trusts (the same rule as `decide`).
  const companyIds = holders.c.filter(
    (id) => !receiver.nc.includes(id) && (receiver.c.includes(id) || receiver.tc.includes(id)),
  );
  const [contacts, callers, callerCompanies] = await Promise.all([
    contactsWithPhone(deps.db, receiverId, caller.e164),
    peopleKnowing(deps.db, receiverId, holders.p),
    companyRefs(deps.db, companyIds),
  ]);
  return { contacts, people: callers, companies: callerCompanies };
}

/**
 * The people among `ids` (the holders of the caller's number) who know the
 * receiver: they share a company, or they trusted the receiver. A number
 * the receiver merely saved as a contact names nobody (docs/security.md).
 */
async function peopleKnowing(db: Db, receiverId: number, ids: number[]): Promise<CallerPerson[]> {
  if (ids.length === 0) return [];
  const rows = await db
    .select({
      id: people.id,
      firstName: people.firstName,
      middleName: people.middleName,
      lastName: people.lastName,
      avatarUrl: people.avatarUrl,
      e2ee: e2eeColumn,
      e2eId: people.e2eId,
    })
    .from(people)
    .where(
      and(
        inList(people.id, ids),
        sql`(${people.id} in (select m.person_id from ${memberships} m join ${memberships} mine
                on mine.company_id = m.company_id and mine.person_id = ${receiverId})
             or ${people.id} in (select ${personTrust.personId} from ${personTrust}
                where ${personTrust.trustedPersonId} = ${receiverId} and ${personTrust.trusted} = 1))`,
      ),
    )
    .orderBy(asc(people.id))
    .all();
  return rows.map((row) => ({
    id: row.id,
    first_name: row.firstName,
    middle_name: row.middleName,
    last_name: row.lastName,
    display_name: displayName(row),
    avatar: row.avatarUrl ?? "",
    e2ee: Boolean(row.e2ee),
    e2e_id: row.e2eId,
  }));
}

async function companyRefs(db: Db, ids: number[]): Promise<CompanyRef[]> {
  if (ids.length === 0) return [];
  const rows = await db
    .select({ id: companies.id, name: companies.name, slug: companies.slug, logo: companies.logo, url: companies.url })
    .from(companies)
    .where(inList(companies.id, ids))
    .orderBy(asc(companies.id))
    .all();
  return rows.map(toCompanyRef);
}

/**
 * Records a blocked call; runs after the answer (`waitUntil`), so a failure
 * (the member deleted meanwhile) is logged, never surfaced.
 */
export async function recordBlockedCall(db: Db, call: BlockedCallInput) {
  try {
    await db.insert(blockedCalls).values({ ...call, createdAt: new Date() });
  } catch (err) {
    console.error(JSON.stringify({ level: "error", error: `recording a blocked call failed: ${String(err)}` }));
  }
}

/** The newest 100 blocked calls of a member [seed 2.4, 4.1 rule 8]. */
export async function latestBlockedCalls(db: Db, personId: number) {
  const rows = await db
    .select()
    .from(blockedCalls)
    .where(eq(blockedCalls.personId, personId))
    .orderBy(desc(blockedCalls.createdAt), desc(blockedCalls.id))
    .limit(100)
    .all();
  return rows.map((row) => ({
    id: personId,
    caller_id: row.callerId ?? "",
    country_code: row.countryCode,
    phone_number: row.phoneNumber,
    created_at: iso(row.createdAt)!,
  }));
}

const FIELD_NAMES = ["number_code", "number", "inbound_code", "inbound", "caller_id"] as const;

/**
 * Reads the lookup fields from whatever the provider sent (query, JSON or
 * form): strings are kept, numbers written as strings, the first of repeated
 * values taken, anything else ignored. Never throws.
 */
export function readLookupFields(...sources: unknown[]): LookupFields {
  const fields: LookupFields = {};
  for (const source of sources) {
    if (typeof source !== "object" || source === null || Array.isArray(source)) continue;
    for (const name of FIELD_NAMES) {
      let value = (source as Record<string, unknown>)[name];
      if (Array.isArray(value)) value = value[0];
      if (typeof value === "number" && Number.isFinite(value)) value = String(value);
      if (typeof value === "string") fields[name] = value;
    }
  }
  return fields;
}
