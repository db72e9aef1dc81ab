import type { CallParties, LookupParty } from "../../domain/call-parties";
import { phoneFromInternational, phoneFromParts } from "../../lib/phone";

/**
 * Reading a ringing call's two numbers from whatever the provider sent
 * (docs/decisions.md, "trust-lookup input"; docs/providers.md, "The
 * fields"): the lookup fields of the query, a JSON or form body, or a
 * Telnyx Call Control envelope, and the `Lookup-Problem` header naming what
 * could not be read. Never throws: trust-lookup answers no error for its input.
 */

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

/** Both sides of the call and the caller id, as the trust decision takes them (services/trust-lookup.ts). */
export const readParties = (fields: LookupFields): CallParties => ({
  receiver: readReceiver(fields),
  caller: readCaller(fields),
  callerId: fields.caller_id,
});

const RECEIVER_FIELDS = ["number_code", "number", "To", "Called"];
const CALLER_FIELDS = ["inbound_code", "inbound", "From", "Caller"];
const repeatedAny = (fields: LookupFields, names: string[]) => names.some((name) => fields.repeated?.includes(name));

/**
 * The `Lookup-Problem` header's value (docs/decisions.md, "`Lookup-Problem`"), or null when both
 * numbers were readable and the index answered: `receiver missing`, `caller unreadable`, and
 * `index unavailable`, joined with `, `. A well-formed receiver nobody holds is no problem.
 */
export function lookupProblem({ receiver, caller }: CallParties, indexUnavailable = false): string | null {
  const problems = [
    receiver.problem && `receiver ${receiver.problem}`,
    caller.problem && `caller ${caller.problem}`,
    indexUnavailable ? INDEX_UNAVAILABLE : null,
  ].filter((problem) => problem !== null);
  return problems.length > 0 ? problems.join(", ") : null;
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
      if (typeof value !== "string") continue;
      fields[name] = value;
      // A later source wins, over a field an earlier one repeated too (the body over the query string).
      if (fields.repeated?.includes(name)) fields.repeated = fields.repeated.filter((repeated) => repeated !== name);
      if (fields.repeated?.length === 0) delete fields.repeated;
    }
  }
  return fields;
}
