/**
 * Delivery of webhook history rows, following the Standard Webhooks
 * specification (https://www.standardwebhooks.com/); what a receiver sees is
 * docs/webhooks.md. One file per concern:
 *
 * - `attempt.ts`: one attempt at a row and what the consumer does next;
 * - `sending.ts`: the signed POST and how its answer is read;
 * - `signing.ts`: the `webhook-signature` header;
 * - `retry-policy.ts`: the retry schedule, `Retry-After`, deactivation;
 * - `lanes.ts`: concurrency and fairness within one consumer run;
 * - `records.ts`: the history rows and attempts in D1;
 * - `test-send.ts`, `resend.ts`, `sweep.ts`: `POST /webhooks/{id}/test`,
 *   the resend of a history entry, the outbox sweep;
 * - `archive.ts`: finished deliveries handed to their company's object.
 */
export { handOverFinished, handOverStatus, HANDOVER_CHUNK } from "./archive";
export { attemptDelivery, type AttemptOptions, type DeliveryOutcome } from "./attempt";
export { fairOrder, Lanes } from "./lanes";
export { deliveriesById, historyColumns, listAttempts, type Delivery } from "./records";
export { resendDelivery } from "./resend";
export { sweepOutbox } from "./sweep";
export { sendTestEvent } from "./test-send";
