import type { Phone } from "../lib/phone";

/**
 * The two numbers of a ringing call as the provider gave them
 * (docs/decisions.md, "trust-lookup input"): read from the request's fields
 * by the buzz routes (routes/buzz/lookup-fields.ts), decided on by the
 * services (services/trust-lookup.ts).
 */

/** What was wrong with one side of a lookup, for the `Lookup-Problem` header. */
export type PartyProblem = "missing" | "unreadable";

/** One side of a call as read from the fields: the number, or what was wrong, and the raw input. */
export type LookupParty = { phone: Phone | null; problem: PartyProblem | null; code: string; number: string };

/** A lookup's question: who is called, who calls, and the caller id the provider passed along (raw). */
export type CallParties = { receiver: LookupParty; caller: LookupParty; callerId: string | undefined };
