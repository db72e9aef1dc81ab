import type { CallParties } from "../domain/call-parties";
import { decide } from "../domain/trust-records";
import { applyVerification, type BlockReason, type CallerVerification } from "../domain/caller-verification";
import { readRecords, type Defer } from "./trust-index/read";
import type { Deps } from "./deps";

/**
 * The ringing path's decision (docs/decisions.md, "Secure calling"): whether
 * a call may ring, from the trust index alone. Its neighbours: the fields it
 * is asked with are read beside the buzz routes (routes/buzz/lookup-fields.ts),
 * what a trusted caller's receiver may know is call-lookup's
 * (services/call-lookup.ts), and the call it blocks is recorded by
 * services/blocked-calls.ts.
 */

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
 * too; `indexUnavailable` when the index could not be read (the answer is then
 * untrusted: fail closed). Warm, it is one round of KV reads (the receiver,
 * the caller's number and its contact bucket, together) and no D1.
 */
export async function lookupTrust(
  deps: Deps,
  { receiver: receiverParty, caller: callerParty, callerId }: CallParties,
  verification: CallerVerification,
  defer: Defer,
): Promise<{
  trusted: boolean;
  user_id: number;
  caller_verification: CallerVerification;
  blocked: BlockedCallInput | null;
  indexUnavailable: boolean;
}> {
  const receiving = receiverParty.phone;
  const nobody = {
    trusted: false,
    user_id: 0,
    caller_verification: verification,
    blocked: null,
    indexUnavailable: false,
  };
  if (!receiving) return nobody;
  const caller = callerParty.phone;
  const records = await readRecords(deps, receiving.e164, caller?.e164 ?? null, defer);
  // The index could not be read, and this isolate may not ask D1 now: fail closed (lib/fallback-gate.ts).
  if (records.unavailable) return { ...nobody, indexUnavailable: true };
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
    indexUnavailable: false,
    blocked: trusted
      ? null
      : {
          personId: receiverId,
          callerId: clip(callerId, 64) || null,
          countryCode: caller?.countryCode ?? clip(callerParty.code, 8),
          phoneNumber: caller?.nationalNumber ?? clip(callerParty.number, 32),
          reason,
        },
  };
}
