import {
  readVerification,
  verificationFieldNames,
  type CallerVerification,
  type VerificationFields,
} from "../domain/caller-verification";

/**
 * The caller's verification (STIR/SHAKEN) from whatever the provider sent —
 * the query, a form or JSON body, a Telnyx Call Control payload
 * (docs/providers.md, "Caller verification"): every value of each field is
 * kept (strings, and numbers or booleans as text: Telnyx's JSON sends
 * `shaken_stir_validated: true`), a later source wins per field name, and
 * anything else is ignored. Never throws.
 */
export function callerVerificationOf(...sources: unknown[]): CallerVerification {
  const fields: VerificationFields = {
    StirVerstat: [],
    verstat: [],
    shaken_stir_attestation: [],
    shaken_stir_validated: [],
  };
  for (const source of sources) {
    if (typeof source !== "object" || source === null || Array.isArray(source)) continue;
    for (const name of verificationFieldNames) {
      const value = (source as Record<string, unknown>)[name];
      if (value === undefined) continue;
      const values = (Array.isArray(value) ? value : [value]).flatMap((item: unknown) =>
        typeof item === "string" || typeof item === "boolean" || (typeof item === "number" && Number.isFinite(item))
          ? [String(item)]
          : [],
      );
      if (values.length > 0) fields[name] = values;
    }
  }
  return readVerification(fields);
}
