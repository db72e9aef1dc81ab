import { and, asc, sql } from "drizzle-orm";
import type { Db } from "../db/client";
import { companies, people } from "../db/schema";
import type { ContactRead } from "../objects/person/api";
import { ReadBatch } from "../db/batch";
import { inList } from "../db/sql";
import { refusal, type Answer } from "../lib/answer";
import type { Phone } from "../lib/phone";
import { knowsPerson } from "./acquaintance";
import { contactsRead, type Contact } from "./contacts";
import { toCompanyRef, type CompanyRef } from "./companies";
import { displayName, e2eeColumn } from "./people";
import { decide, hasContactPhone, trustedCompaniesOf } from "../domain/trust-records";
import { readRecords, type Defer } from "./trust-index/read";
import type { Deps } from "./deps";
import { applyVerification, type CallerVerification } from "../domain/caller-verification";

export type CallDetails = {
  contacts: Contact[];
  people: CallerPerson[];
  companies: CompanyRef[];
  caller_verification: CallerVerification;
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
 * receiving number must then be their secure number, else a 404 refusal.
 * The numbers are the contract's fields only (`number_code` + `number`,
 * `inbound_code` + `inbound`), read by the route.
 * An untrusted or unmatched call (verification included, as trust-lookup
 * decides it) gets three empty arrays. The decision reuses the lookup's
 * records (one KV round); then the details the records say exist are read
 * in one D1 batch (one round trip).
 */
export async function lookupCall(
  deps: Deps,
  { receiving, caller }: { receiving: Phone | null; caller: Phone | null },
  verification: CallerVerification,
  asPerson: number | null,
  defer: Defer,
): Promise<Answer<{ details: CallDetails }>> {
  const nothing = {
    ok: true as const,
    details: { contacts: [], people: [], companies: [], caller_verification: verification } as CallDetails,
  };
  const notYours = refusal(404, "the receiving number is not your secure number");
  if (!receiving) return asPerson === null ? nothing : notYours;
  const records = await readRecords(deps, receiving.e164, caller?.e164 ?? null, defer);
  if (records.unavailable) return nothing; // fail closed: nothing is known about the caller
  const { receiver, caller: holders, bucket } = records;
  const receiverId = receiver.p === 0 ? null : receiver.p;
  if (asPerson !== null && receiverId !== asPerson) return notYours;
  if (receiverId === null || caller === null || !decide(receiver, caller.e164, holders, bucket)) return nothing;
  if (!applyVerification(true, verification, receiver.vo ? "verified_only" : "everyone").trusted) return nothing;

  // The caller's companies the receiver trusts (the same rule as `decide`). Only what the records
  // say exists is read: a contact only when the number is one of the receiver's contact phones,
  // people only when someone holds it. The receiver's object first (their contacts with that
  // phone, and who of the holders trusted them), then every D1 read in one batch.
  const companyIds = trustedCompaniesOf(receiver, holders);
  const isContact = hasContactPhone(bucket, caller.e164);
  const object = deps.objects.of(receiverId);
  const own: ContactRead = isContact
    ? await object.contactsWithPhone(caller.e164, holders.p)
    : { items: [], total: 0, trustedMe: holders.p.length > 0 ? await object.trustedMe(holders.p) : [] };
  const reads = new ReadBatch();
  const contacts = contactsRead(deps.db, receiverId, own);
  const contactRows = contacts.statement ? reads.add([contacts.statement()] as const) : null;
  const peopleRows =
    holders.p.length > 0 ? reads.add([holdersKnowing(deps.db, receiverId, holders.p, own.trustedMe)] as const) : null;
  const companyRows = companyIds.length > 0 ? reads.add([companyRefs(deps.db, companyIds)] as const) : null;
  const results = await reads.run(deps.db);
  const people = peopleRows ? peopleRows(results)[0] : [];
  const linked = contactRows ? (contactRows(results)[0] as Parameters<typeof contacts.assemble>[0]) : [];
  // People a contact's email links to, beyond the holders: asked of the receiver's object only then.
  const ask = contacts.unresolved(linked);
  return {
    ok: true,
    details: {
      contacts: contacts.assemble(linked, ask.length > 0 ? await object.trustedMe(ask) : []),
      people: people.map(toCallerPerson),
      companies: companyRows ? companyRows(results)[0].map(toCompanyRef) : [],
      caller_verification: verification,
    },
  };
}

/**
 * The people among `ids` (the holders of the caller's number) who know the
 * receiver (`knowsPerson`; `trustedMe`: who trusted the receiver, from the
 * receiver's object): only they are shown; a number the receiver merely
 * saved as a contact names nobody (docs/security.md).
 */
function holdersKnowing(db: Db, receiverId: number, ids: number[], trustedMe: number[]) {
  return db
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
    .where(and(inList(people.id, ids), knowsPerson(sql`${people.id}`, receiverId, trustedMe)))
    .orderBy(asc(people.id));
}

type KnownPerson = Awaited<ReturnType<typeof holdersKnowing>>[number];

function toCallerPerson(row: KnownPerson): CallerPerson {
  return {
    id: row.id,
    first_name: row.firstName,
    middle_name: row.middleName,
    last_name: row.lastName,
    display_name: displayName(row),
    avatar: row.avatarUrl ?? "",
    e2ee: Boolean(row.e2ee),
    e2e_id: row.e2eId,
  };
}

function companyRefs(db: Db, ids: number[]) {
  return db
    .select({ id: companies.id, name: companies.name, slug: companies.slug, logo: companies.logo, url: companies.url })
    .from(companies)
    .where(inList(companies.id, ids))
    .orderBy(asc(companies.id));
}
