import type { Context } from "hono";
import { accepted } from "../../lib/answer";
import { forbidden, unauthorized, upgradeRequired } from "../../lib/errors";
import { personId, tokenFromAuthorization } from "../../middleware/auth";
import { readsSignedBodyOnly } from "../../middleware/provider-signature";
import * as activities from "../../services/activities";
import { saveEncryption } from "../../services/encryption";
import { mintStreamTicket, openStream as connectStream, redeemStreamTicket } from "../../services/stream";
import { heartbeat as readHeartbeat } from "../../services/heartbeat";
import { lookupTrust } from "../../services/trust-lookup";
import { lookupCall } from "../../services/call-lookup";
import { latestBlockedCalls, recordBlockedCall } from "../../services/blocked-calls";
import { dialFor } from "../../services/call-answers";
import { callControlFields, isRingingCall } from "../../services/call-control";
import { callerVerificationOf } from "../../services/caller-verification";
import type { CallerVerification } from "../../domain/caller-verification";
import { dialTwiml, rejectTwiml, wantsTwiml, XML_CONTENT_TYPE } from "../../lib/twiml";
import type { AppEnv, AppRouteHandler, LookupCharge } from "../../types";
import { phoneFromParts } from "../../lib/phone";
import { formFields, isFormType } from "../../lib/provider-signatures";
import type * as routes from "./buzz.routes";
import { UNLISTED_BLOCKED } from "./blocked.schemas";
import { LOOKUP_PROBLEM } from "./lookup.schemas";
import { lookupProblem, readLookupFields, readParties, type LookupFields } from "./lookup-fields";

export const putEncryption: AppRouteHandler<typeof routes.putEncryption> = async (c) => {
  const { saved } = accepted(await saveEncryption(c.var.deps, personId(c.var.principal), c.req.valid("json")));
  return c.json(saved, 200);
};

/**
 * Answers a trust lookup; the blocked call and KV fills happen after the answer.
 * A missing or unreadable number is named in `Lookup-Problem` (docs/decisions.md, "`Lookup-Problem`").
 */
async function answerTrustLookup(c: Context<AppEnv>, fields: LookupFields, verification: CallerVerification) {
  const defer = (work: Promise<unknown>) => c.executionCtx.waitUntil(work);
  // A provider's lookup is charged to its receiving number's share, alongside the KV read (rate-limit.ts).
  const parties = readParties(fields);
  const charge = chargeOf(c, parties.receiver.phone?.e164 ?? null);
  const { trusted, user_id, caller_verification, blocked, indexUnavailable } = await lookupTrust(
    c.var.deps,
    parties,
    verification,
    defer,
  );
  // A lookup the rate limit refuses is answered 429 (rate-limit.ts): its call is not recorded. One
  // past its number's share is counted, not listed (docs/decisions.md, "Rate limits"). A HEAD (the GET
  // route's, headers only) asks about no call that rang: nothing is recorded.
  if (blocked && c.req.method !== "HEAD") {
    defer(
      charge.then(({ admitted, withinShare }) =>
        admitted ? recordBlockedCall(c.var.deps, blocked, withinShare) : undefined,
      ),
    );
  }
  const problem = lookupProblem(parties, indexUnavailable);
  if (problem) c.header(LOOKUP_PROBLEM, problem);
  return { trusted, user_id, caller_verification };
}

/**
 * Charges a ringing-path lookup to `receiver`'s share when the rate limit asks for it (a provider's
 * token, rate-limit.ts); otherwise what the token's own charge decided, within any share.
 */
function chargeOf(c: Context<AppEnv>, receiver: string | null): Promise<LookupCharge> {
  if (c.var.chargeLookup) return c.var.chargeLookup(receiver);
  return (c.var.admitted ?? Promise.resolve(true)).then((admitted) => ({ admitted, withinShare: true }));
}

/**
 * The answer as JSON, or as TwiML/TeXML when the provider asked for it
 * (`Accept: application/xml` or `?answer=twiml`, docs/providers.md).
 */
async function respond(c: Context<AppEnv>, answer: Awaited<ReturnType<typeof answerTrustLookup>>) {
  if (!wantsTwiml(c.req.url, c.req.header("Accept"))) return c.json(answer, 200);
  const xml = answer.trusted ? dialTwiml(await dialFor(c.var.deps, answer.user_id)) : rejectTwiml();
  return c.text(xml, 200, { "Content-Type": XML_CONTENT_TYPE });
}

export const trustLookupGet: AppRouteHandler<typeof routes.trustLookupGet> = async (c) => {
  // Read from the query string itself, so a field given twice is seen as such (readLookupFields).
  const query = c.req.queries();
  return respond(c, await answerTrustLookup(c, readLookupFields(query), callerVerificationOf(query)));
};

export const trustLookupPost: AppRouteHandler<typeof routes.trustLookupPost> = async (c) => {
  // Query fields count too (the seed's sample sends them there); body fields win; a Telnyx
  // Call Control envelope is read like To/From. A Telnyx-signed request is its signed body
  // alone: Telnyx does not sign the query string (docs/providers.md, "Signed requests").
  const body = await readAnyBody(c);
  // Another event of a call (answered, hung up, …): acknowledged, asked about nobody, recorded nowhere.
  if (!isRingingCall(body)) return respond(c, { trusted: false, user_id: 0, caller_verification: null });
  const query = readsSignedBodyOnly(c.var.principal) ? {} : c.req.queries();
  const sources = [query, callControlFields(body), body];
  return respond(c, await answerTrustLookup(c, readLookupFields(...sources), callerVerificationOf(...sources)));
};

/**
 * The body of a trust-lookup POST as an object, whatever it is: a form, JSON,
 * or nothing usable (then {}). Never throws (docs/decisions.md).
 */
async function readAnyBody(c: Context<AppEnv>): Promise<unknown> {
  try {
    const type = c.req.header("Content-Type") ?? "";
    // From the raw bytes: a signature check may have read them already (provider-signature.ts).
    if (/^multipart\/form-data/i.test(type)) {
      const form = await new Response(await c.req.arrayBuffer(), { headers: { "Content-Type": type } }).formData();
      const fields: Record<string, unknown[]> = {};
      for (const [name, value] of form) (fields[name] ??= []).push(value);
      return fields;
    }
    // Decoded by hand: the runtime warns when a form body is read with text().
    const text = new TextDecoder().decode(await c.req.arrayBuffer());
    if (isFormType(type)) return formObject(text);
    if (text.trim() === "") return {};
    try {
      return JSON.parse(text) as unknown;
    } catch {
      // Providers that post a form without saying so.
      return text.includes("=") ? formObject(text) : {};
    }
  } catch {
    return {};
  }
}

/** A form's fields, a repeated one as the list of its values (readLookupFields reads it as unreadable). */
function formObject(text: string): Record<string, string[]> {
  return Object.fromEntries(formFields(text));
}

export const callLookup: AppRouteHandler<typeof routes.callLookup> = async (c) => {
  const principal = c.var.principal;
  const asPerson = principal?.kind === "person" ? principal.personId : null;
  const defer = (work: Promise<unknown>) => c.executionCtx.waitUntil(work);
  const query = c.req.valid("query");
  // The contract's fields only: `number_code` + `number`, `inbound_code` + `inbound`.
  const receiving = phoneFromParts(query.number_code ?? "", query.number ?? "");
  const caller = phoneFromParts(query.inbound_code ?? "", query.inbound ?? "");
  void chargeOf(c, receiving?.e164 ?? null);
  const answer = await lookupCall(c.var.deps, { receiving, caller }, callerVerificationOf(query), asPerson, defer);
  return c.json(accepted(answer).details, 200);
};

export const heartbeat: AppRouteHandler<typeof routes.heartbeat> = async (c) => {
  const { beat } = accepted(await readHeartbeat(c.var.deps, personId(c.var.principal)));
  return c.json(beat, 200);
};

export const listBlocked: AppRouteHandler<typeof routes.listBlocked> = async (c) => {
  const { calls, unlisted } = await latestBlockedCalls(c.var.deps, personId(c.var.principal));
  c.header(UNLISTED_BLOCKED, `today=${unlisted.today}, total=${unlisted.total}`);
  return c.json(calls, 200);
};

export const createActivity: AppRouteHandler<typeof routes.createActivity> = async (c) => {
  const input = c.req.valid("json");
  const me = personId(c.var.principal);
  // Messages and outgoing calls are recorded by their sender, incoming calls by
  // their receiver: nobody records an activity in another person's name. The
  // other party's existence is not checked: a 400 for an unknown id would tell
  // a stranger which ids are accounts; a record naming no one reads as null.
  const recorder = activities.recordedBy(input.type);
  if (input[`${recorder}_type`] !== "person" || input[`${recorder}_id`] !== me) {
    throw forbidden(
      recorder === "sendable"
        ? "a message or outgoing call is recorded by its sender: `sendable_type` must be person and `sendable_id` your id"
        : "an incoming call is recorded by its receiver: `receivable_type` must be person and `receivable_id` your id",
    );
  }
  return c.json({ success: true as const, data: await activities.recordActivity(c.var.deps, me, input) }, 200);
};

export const listActivity: AppRouteHandler<typeof routes.listActivity> = async (c) => {
  const { id } = c.req.valid("param");
  const { limit } = c.req.valid("query");
  return c.json(await activities.activitiesAfter(c.var.deps, personId(c.var.principal), id, limit), 200);
};

export const clearHistory: AppRouteHandler<typeof routes.clearHistory> = async (c) => {
  await activities.clearHistory(c.var.deps, personId(c.var.principal));
  return c.body(null, 204);
};

/* ---------- the live stream (docs/realtime.md) ---------- */

export const openStream: AppRouteHandler<typeof routes.openStream> = async (c) => {
  const { after, ticket } = c.req.valid("query");
  const principal = c.var.principal;
  if (c.var.authFailure) throw unauthorized(c.var.authFailure);
  if (principal?.kind === "service") throw forbidden("the stream is a person's: open it with a person token");
  if (!principal && ticket === undefined) {
    throw unauthorized(
      "the stream needs a person token (Authorization: Bearer <token>) or `?ticket=` from POST /apps/buzz/stream/tickets",
    );
  }
  if (c.req.header("Upgrade")?.toLowerCase() !== "websocket") {
    throw upgradeRequired("this endpoint is a WebSocket: connect with `Upgrade: websocket` (docs/realtime.md)");
  }
  const who = principal
    ? { me: principal.personId, tokenId: principal.tokenId, until: principal.expiresAt }
    : await redeemStreamTicket(c.var.deps, ticket!, new Date());
  if (!who) {
    throw unauthorized(
      "the ticket is unknown, spent or expired, or its token is no longer valid: ask POST /apps/buzz/stream/tickets again",
    );
  }
  return connectStream(c.var.deps, who, after);
};

export const createStreamTicket: AppRouteHandler<typeof routes.createStreamTicket> = async (c) => {
  const principal = c.var.principal;
  // The token the person authenticated with (requirePerson read it): the ticket is bound to it.
  const token = tokenFromAuthorization(c.req.header("Authorization") ?? "");
  if (principal?.kind !== "person" || !token) throw unauthorized("this endpoint needs a person token");
  return c.json(await mintStreamTicket(c.var.deps, principal.personId, principal.tokenId, token, new Date()), 201);
};
