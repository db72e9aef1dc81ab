import { and, asc, sql } from "drizzle-orm";
import type { Db } from "../db/client";
import { companies, people } from "../db/schema";
import type { ContactRead } from "../objects/person/api";
import { ReadBatch } from "../db/batch";
import { inList } from "../db/sql";
import { phoneFromInternational, phoneFromParts, type Phone } from "../lib/phone";
import { knowsPerson } from "./acquaintance";
import { contactsRead, type Contact } from "./contacts";
import { toCompanyRef, type CompanyRef } from "./companies";
import { displayName, e2eeColumn } from "./people";
import { decide, hasContactPhone, trustedCompaniesOf } from "../domain/trust-records";
import { readRecords, type Defer } from "./trust-index/read";
import type { IndexDeps } from "./trust-index/current";
import { applyVerification, type BlockReason, type CallerVerification } from "../domain/caller-verification";

/**
 * The lookup parameters (docs/decisions.md, "trust-lookup input"), as the provider sent them (any may be
 * missing), and the names Twilio and Telnyx give the two numbers
 * (docs/decisions.md, "trust-lookup's number forms"; docs/providers.md, "The
 * fields"): `To`/`Called` for the receiver, `From`/`Caller` for the caller.
 */
export type LookupFields = {
  number_code?: string;
  number?: string;
  inbound_code?: string;
  inbound?: string;
  caller_id?: string;
  To?: string;
  From?: string;
  Called?: string;
  Caller?: string;
  /** Fields the provider sent more than once in one source: unreadable, whichever value was meant. */
  repeated?: string[];
};

/** The `Lookup-Problem` of a lookup the index could not answer (KV failing; lib/fallback-gate.ts). */
export const INDEX_UNAVAILABLE = "index unavailable";

/** What was wrong with one side of a lookup, for the `Lookup-Problem` header. */
export type PartyProblem = "missing" | "unreadable";

/** One side of a call as read from the fields: the number, or what was wrong, and the raw input. */
export type LookupParty = { phone: Phone | null; problem: PartyProblem | null; code: string; number: string };

const given = (value: string | undefined): value is string => value !== undefined && value.trim() !== "";

/**
 * A number given whole, in E.164. A `+` sent unencoded in a query string or a
 * form arrives as a space: a single leading space before a digit is read as
 * the `+` it was (docs/decisions.md).
 */
const wholeNumber = (value: string) => phoneFromInternational(/^ [0-9]/.test(value) ? `+${value.slice(1)}` : value);

/**
 * One side of the call (docs/decisions.md, "trust-lookup input"): the
 * contract's fields win when present (`code` + `number`, or `number` alone in
 * E.164), then the provider's names in order, each in E.164. Blank values
 * count as absent. Never throws.
 */
function readParty(
  code: string | undefined,
  number: string | undefined,
  aliases: (string | undefined)[],
  repeated: boolean,
): LookupParty {
  if (repeated) return { phone: null, problem: "unreadable", code: "", number: "" };
  if (given(number)) {
    const phone = given(code) ? phoneFromParts(code, number) : wholeNumber(number);
    return { phone, problem: phone ? null : "unreadable", code: code ?? "", number };
  }
  const alias = aliases.find(given);
  if (alias !== undefined) {
    const phone = wholeNumber(alias);
    return { phone, problem: phone ? null : "unreadable", code: "", number: alias };
  }
  return { phone: null, problem: "missing", code: code ?? "", number: "" };
}

/** The receiving number: `number_code` + `number`, `number` in E.164, `To`, or `Called`. */
export const readReceiver = (fields: LookupFields) =>
  readParty(fields.number_code, fields.number, [fields.To, fields.Called], repeatedAny(fields, RECEIVER_FIELDS));

/** The caller's number: `inbound_code` + `inbound`, `inbound` in E.164, `From`, or `Caller`. */
export const readCaller = (fields: LookupFields) =>
  readParty(fields.inbound_code, fields.inbound, [fields.From, fields.Caller], repeatedAny(fields, CALLER_FIELDS));

const RECEIVER_FIELDS = ["number_code", "number", "To", "Called"];
const CALLER_FIELDS = ["inbound_code", "inbound", "From", "Caller"];
const repeatedAny = (fields: LookupFields, names: string[]) => names.some((name) => fields.repeated?.includes(name));

/**
 * The `Lookup-Problem` header's value (docs/decisions.md, "`Lookup-Problem`"), or null when both
 * numbers were readable: `receiver missing`, `caller unreadable`, both joined
 * with `, `. A well-formed receiver nobody holds is no problem.
 */
export function lookupProblem(receiver: LookupParty, caller: LookupParty): string | null {
  const problems = [
    receiver.problem && `receiver ${receiver.problem}`,
    caller.problem && `caller ${caller.problem}`,
  ].filter((problem) => problem !== null);
  return problems.length > 0 ? problems.join(", ") : null;
}

export type BlockedCallInput = {
  personId: number;
  callerId: string | null;
  countryCode: string;
  phoneNumber: string;
  /** Why verification blocked it; null or absent: the caller is not trusted. */
  reason?: BlockReason | null;
};

/** Raw input kept on a blocked call is clipped: it is whatever the provider sent. */
const clip = (value: string | undefined, max: number) => (value ?? "").trim().slice(0, max);

/**
 * trust-lookup (docs/decisions.md, "Secure calling"): `user_id` is the member
 * holding the receiving number (0 when it is unparseable or nobody's);
 * `trusted` only when that member trusts the caller's number and the
 * caller's `verification` (read by services/caller-verification.ts) allows
 * it: a failed one never rings; in the member's strict mode only level A
 * does. Never throws for its input. When a member
 * matched and the answer is untrusted, the blocked call to record is returned
 * too; `problem` is the `Lookup-Problem` header's value (or null). Warm, it
 * is one round of KV reads (the receiver, the caller's number and its contact
 * bucket, together) and no D1.
 */
export async function lookupTrust(
  deps: IndexDeps,
  fields: LookupFields,
  verification: CallerVerification,
  defer: Defer,
): Promise<{
  trusted: boolean;
  user_id: number;
  caller_verification: CallerVerification;
  blocked: BlockedCallInput | null;
  problem: string | null;
}> {
  const receiverParty = readReceiver(fields);
  const callerParty = readCaller(fields);
  const problem = lookupProblem(receiverParty, callerParty);
  const receiving = receiverParty.phone;
  const nobody = { trusted: false, user_id: 0, caller_verification: verification, blocked: null, problem };
  if (!receiving) return nobody;
  const caller = callerParty.phone;
  const records = await readRecords(deps, receiving.e164, caller?.e164 ?? null, defer);
  // The index could not be read, and this isolate may not ask D1 now: fail closed (lib/fallback-gate.ts).
  if (records.unavailable) return { ...nobody, problem: [problem, INDEX_UNAVAILABLE].filter(Boolean).join(", ") };
  const receiverId = records.receiver.p;
  if (receiverId === 0) return nobody;
  const known = caller !== null && decide(records.receiver, caller.e164, records.caller, records.bucket);
  const { trusted, reason } = applyVerification(
    known,
    verification,
    records.receiver.vo ? "verified_only" : "everyone",
  );
  return {
    trusted,
    user_id: receiverId,
    caller_verification: verification,
    problem,
    blocked: trusted
      ? null
      : {
          personId: receiverId,
          callerId: clip(fields.caller_id, 64) || null,
          countryCode: caller?.countryCode ?? clip(callerParty.code, 8),
          phoneNumber: caller?.nationalNumber ?? clip(callerParty.number, 32),
          reason,
        },
  };
}

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
 * receiving number must then be their secure number, else null (404).
 * An untrusted or unmatched call (verification included, as trust-lookup
 * decides it) gets three empty arrays. The decision reuses the lookup's
 * records (one KV round); then the details the records say exist are read
 * in one D1 batch (one round trip).
 */
export async function lookupCall(
  deps: IndexDeps,
  fields: LookupFields,
  verification: CallerVerification,
  asPerson: number | null,
  defer: Defer,
): Promise<CallDetails | null> {
  const nothing: CallDetails = { contacts: [], people: [], companies: [], caller_verification: verification };
  const receiving = phoneFromParts(fields.number_code ?? "", fields.number ?? "");
  if (!receiving) return asPerson === null ? nothing : null;
  const caller = phoneFromParts(fields.inbound_code ?? "", fields.inbound ?? "");
  const records = await readRecords(deps, receiving.e164, caller?.e164 ?? null, defer);
  if (records.unavailable) return nothing; // fail closed: nothing is known about the caller
  const { receiver, caller: holders, bucket } = records;
  const receiverId = receiver.p === 0 ? null : receiver.p;
  if (asPerson !== null && receiverId !== asPerson) return null;
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
  const contactRows = contacts.statement ? reads.add([contacts.statement] as const) : null;
  const peopleRows =
    holders.p.length > 0 ? reads.add([holdersKnowing(deps.db, receiverId, holders.p, own.trustedMe)] as const) : null;
  const companyRows = companyIds.length > 0 ? reads.add([companyRefs(deps.db, companyIds)] as const) : null;
  const results = await reads.run(deps.db);
  const people = peopleRows ? peopleRows(results)[0] : [];
  const linked = contactRows ? (contactRows(results)[0] as Parameters<typeof contacts.assemble>[0]) : [];
  // People a contact's email links to, beyond the holders: asked of the receiver's object only then.
  const ask = contacts.unresolved(linked);
  return {
    contacts: contacts.assemble(linked, ask.length > 0 ? await object.trustedMe(ask) : []),
    people: people.map(toCallerPerson),
    companies: companyRows ? companyRows(results)[0].map(toCompanyRef) : [],
    caller_verification: verification,
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

const FIELD_NAMES = [
  "number_code",
  "number",
  "inbound_code",
  "inbound",
  "caller_id",
  "To",
  "From",
  "Called",
  "Caller",
] as const satisfies readonly (keyof LookupFields)[];

/**
 * Reads the lookup fields from whatever the provider sent (query, JSON or
 * form): strings are kept, numbers written as strings, anything else
 * ignored; a later source wins per field name. A field given more than once
 * in one source (`To=…&To=…`, a JSON array) is unreadable, the same rule for
 * the query string and the body (docs/decisions.md). Never throws.
 */
export function readLookupFields(...sources: unknown[]): LookupFields {
  const fields: LookupFields = {};
  for (const source of sources) {
    if (typeof source !== "object" || source === null || Array.isArray(source)) continue;
    for (const name of FIELD_NAMES) {
      let value = (source as Record<string, unknown>)[name];
      if (Array.isArray(value)) {
        if (value.length > 1) {
          delete fields[name];
          fields.repeated = [...(fields.repeated ?? []), name];
          continue;
        }
        value = value[0];
      }
      if (typeof value === "number" && Number.isFinite(value)) value = String(value);
      if (typeof value === "string") fields[name] = value;
    }
  }
  return fields;
}
