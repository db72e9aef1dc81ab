/*
 * Caller verification (STIR/SHAKEN) as the telephony provider reports it
 * (docs/providers.md, "Caller verification"), and what it means for whether a
 * call may ring. Shared by the lookup (services/trust-lookup.ts), the person
 * object (the strict-mode flag in its receiver record) and the routes.
 */

/**
 * The caller's verification: the attestation level the carrier signed and the
 * terminating side verified (`A` full, `B` partial, `C` gateway), `failed`
 * (the signature did not verify: the number may be spoofed), `none` (the
 * provider says nothing was verified, or sent a value nobody can read), or
 * null (the provider sent no verification field at all).
 */
export type CallerVerification = "A" | "B" | "C" | "failed" | "none" | null;

export const callerVerifications = ["A", "B", "C", "failed", "none"] as const;

/** Who may ring a person: everyone they trust (the default), or only callers verified at level A. */
export const callPolicies = ["everyone", "verified_only"] as const;
export type CallPolicy = (typeof callPolicies)[number];

/** The names of the verification fields: Twilio's, SIP's, and Telnyx's pair. */
export const verificationFieldNames = [
  "StirVerstat",
  "verstat",
  "shaken_stir_attestation",
  "shaken_stir_validated",
] as const;

/** Every value the provider sent for each verification field (a field given twice has two). */
export type VerificationFields = Record<(typeof verificationFieldNames)[number], string[]>;

const given = (value: string | undefined): value is string => value !== undefined && value.trim() !== "";

/** How every failed `verstat` value begins (`TN-Validation-Failed[-A|B|C]`), compared in lower case. */
const FAILED_VERSTAT = "tn-validation-failed";

/**
 * Whether the text Twilio signed of a form (its names and values run together, names sorted) holds a
 * failed `StirVerstat`: its name right before a failed value. True of every cut of that form into
 * other fields, since they all sign the same text (middleware/provider-signature.ts).
 */
export const signsFailedStirVerstat = (signed: string) => signed.toLowerCase().includes(`stirverstat${FAILED_VERSTAT}`);

/**
 * A `verstat` value (Twilio's `StirVerstat`, with a level; SIP's, without):
 * `TN-Validation-Passed[-A|B|C]`, `TN-Validation-Failed[-A|B|C]`,
 * `No-TN-Validation`. A pass without a level reads as A: the SIP form names
 * no level, and the verification it reports is the full one. A failure reads
 * as `failed` whatever follows it (a signed Twilio form cut elsewhere can run
 * the value on into the next field: docs/providers.md). Anything else is `none`.
 */
function fromVerstat(value: string): CallerVerification {
  if (value.trim().toLowerCase().startsWith(FAILED_VERSTAT)) return "failed";
  const match = /^TN-Validation-(Passed|Failed)(?:-([ABC]))?$/i.exec(value.trim());
  if (!match) return "none";
  if (match[1]!.toLowerCase() === "failed") return "failed";
  return (match[2]?.toUpperCase() as "A" | "B" | "C" | undefined) ?? "A";
}

/**
 * Telnyx's pair: `shaken_stir_validated` false is a failed verification; the
 * attestation level (`A`, `B`, `C`) counts only when `shaken_stir_validated`
 * is `true` (JSON `true` arrives here as the string): a level is what the
 * originating carrier claimed, and only the validation says the claim was
 * checked. Absent, empty, `0`, `no`, `null` or anything else, and a level
 * that is absent or unreadable, read as `none` (docs/providers.md, "Caller
 * verification"), so strict mode never rings an unchecked `A`.
 */
function fromTelnyx(attestation: string | undefined, validated: string | undefined): CallerVerification {
  if (given(validated) && validated.trim().toLowerCase() === "false") return "failed";
  if (validated?.trim() !== "true") return "none";
  const level = attestation?.trim().toUpperCase();
  return level === "A" || level === "B" || level === "C" ? level : "none";
}

/**
 * One spelling's reading from all its values: a failed one wins; values
 * that disagree are unreadable (`none`), like any repeated provider field.
 */
function oneReading(readings: CallerVerification[]): CallerVerification {
  if (readings.includes("failed")) return "failed";
  return new Set(readings).size === 1 ? readings[0]! : "none";
}

/**
 * The caller's verification from whatever the provider sent: each spelling
 * is read, a `failed` in any of them wins, otherwise the first spelling
 * present counts (Twilio's, SIP's, Telnyx's); null when no verification field
 * was sent.
 */
export function readVerification(fields: VerificationFields): CallerVerification {
  const present = (values: string[]) => values.filter(given);
  const readings: CallerVerification[] = [];
  for (const values of [present(fields.StirVerstat), present(fields.verstat)]) {
    if (values.length > 0) readings.push(oneReading(values.map(fromVerstat)));
  }
  const attestations = present(fields.shaken_stir_attestation);
  const validations = present(fields.shaken_stir_validated);
  if (attestations.length > 0 || validations.length > 0) {
    const pairs = (attestations.length > 0 ? attestations : [undefined]).flatMap((attestation) =>
      (validations.length > 0 ? validations : [undefined]).map((validated) => fromTelnyx(attestation, validated)),
    );
    readings.push(oneReading(pairs));
  }
  if (readings.length === 0) return null;
  return readings.includes("failed") ? "failed" : readings[0]!;
}

/** Why a call the records would trust (or not) was blocked, kept with the blocked call. */
export const blockReasons = ["verification failed", "verification required"] as const;
export type BlockReason = (typeof blockReasons)[number];

/**
 * What verification does to the trust decision (docs/decisions.md, "Caller
 * verification"): a failed verification is never trusted, whoever the number
 * belongs to; in strict mode (`verified_only`) only level A rings. Answers
 * whether the call may ring and, when verification is why it may not, the
 * reason kept with its blocked call.
 */
export function applyVerification(
  trustedByRecords: boolean,
  verification: CallerVerification,
  policy: CallPolicy,
): { trusted: boolean; reason: BlockReason | null } {
  if (verification === "failed") return { trusted: false, reason: "verification failed" };
  if (policy === "verified_only" && verification !== "A")
    return { trusted: false, reason: trustedByRecords ? "verification required" : null };
  return { trusted: trustedByRecords, reason: null };
}
