import {
  type CountryCode,
  getCountryCallingCode,
  isSupportedCountry,
  parsePhoneNumberFromString,
  type PhoneNumber,
} from "libphonenumber-js/core";
import metadata from "libphonenumber-js/metadata.max.json";

/**
 * Phone numbers are parsed with libphonenumber-js and its full metadata (so
 * validity is real, not just a length check) and compared in E.164
 * (docs/decisions.md). The core build with explicit metadata lets us also ask
 * which calling codes exist: the library throws on an unknown one.
 */
export type Phone = {
  /** Calling code as digits, e.g. "1". */
  countryCode: string;
  /** National significant number, digits only. */
  nationalNumber: string;
  /** "+14155550100" */
  e164: string;
};

/**
 * A country calling code given as digits ("1"), with a plus ("+1") or as an
 * ISO 3166-1 alpha-2 country ("US") → digits, or null when no such code exists.
 */
export function normalizeCallingCode(input: string): string | null {
  const value = input.trim();
  const digits = /^\+?([0-9]{1,3})$/.exec(value);
  if (digits) return Object.hasOwn(metadata.country_calling_codes, digits[1]!) ? digits[1]! : null;
  const country = value.toUpperCase();
  if (isCountryCode(country)) return getCountryCallingCode(country as CountryCode, metadata);
  return null;
}

/** Whether `code` is an ISO 3166-1 alpha-2 country the phone metadata knows ("US"; case-sensitive). */
export function isCountryCode(code: string): boolean {
  return /^[A-Z]{2}$/.test(code) && isSupportedCountry(code as CountryCode, metadata);
}

/*
 * The document's `pattern`s for phone inputs (docs/decisions.md, "The document
 * states the rules"): each accepts every string the functions below accept
 * (blanks the server trims included), and refuses what they always refuse.
 * Validity itself (libphonenumber's metadata) is stated in words.
 */
/** `normalizeCallingCode`'s input: 1–3 digits with an optional `+`, or two letters ("US", "us"). */
export const CALLING_CODE_PATTERN = String.raw`^\s*(?:\+?[0-9]{1,3}|[A-Za-z]{2})\s*$`;
/**
 * `phoneFromParts`'s national number: its characters (digits, `+()-.` and
 * blanks), at least one digit. All zeros is valid only under a few calling
 * codes (`00000` under 672), so that is in words, not here.
 */
export const NATIONAL_NUMBER_PATTERN = String.raw`^[0-9+()\-.\s]*[0-9][0-9+()\-.\s]*$`;
/** `phoneFromInternational`'s input: `+`, then digits and `()-.` or blanks, a digit other than 0 among them (the calling code's). */
export const INTERNATIONAL_PHONE_PATTERN = String.raw`^\s*\+[0-9()\-.\s]*[1-9][0-9()\-.\s]*$`;

/** A valid number from a calling code and a national number, or null. */
export function phoneFromParts(callingCode: string, number: string): Phone | null {
  const code = normalizeCallingCode(callingCode);
  if (code === null || !/^[0-9+()\-.\s]{1,32}$/.test(number)) return null;
  const trimmed = number.trim();
  // A number may carry its own "+code"; it must then be the code it was given with.
  const parsed = trimmed.startsWith("+")
    ? parsePhoneNumberFromString(trimmed, metadata)
    : parsePhoneNumberFromString(trimmed, { defaultCallingCode: code }, metadata);
  const phone = toPhone(parsed);
  return phone && phone.countryCode === code ? phone : null;
}

/** A valid number written internationally ("+1 415 555 0100"), or null. */
export function phoneFromInternational(input: string): Phone | null {
  if (!/^\+[0-9()\-.\s]{4,32}$/.test(input.trim())) return null;
  return toPhone(parsePhoneNumberFromString(input.trim(), metadata));
}

function toPhone(parsed: PhoneNumber | undefined): Phone | null {
  if (!parsed || !parsed.isValid()) return null;
  return { countryCode: parsed.countryCallingCode, nationalNumber: parsed.nationalNumber, e164: parsed.number };
}
