import { createRoute, z } from "@hono/zod-openapi";
import { bearerSecurity, errorResponses, jsonContent } from "../../lib/openapi";
import { basicChallenge, requireAuth, requirePerson } from "../../middleware/auth";
import { developmentOnly } from "../../middleware/development-only";
import { requireProviderSignature } from "../../middleware/provider-signature";
import {
  ActivityCreatedSchema,
  ActivityCreateSchema,
  ActivityParams,
  ActivityQuery,
  ActivitySchema,
  BlockedCallSchema,
  HeartbeatSchema,
  StreamQuery,
  StreamTicketSchema,
} from "./buzz.schemas";
import {
  CallLookupQuery,
  CallLookupResultSchema,
  LookupProblemHeaders,
  TrustLookupQuery,
  TrustLookupResultSchema,
} from "./lookup.schemas";
import { UnlistedBlockedHeaders } from "./blocked.schemas";
import { IdempotencyHeaders, idempotent, replayedHeader } from "../../middleware/idempotency";

const tags = ["Secure calling"];

export const EncryptionSchema = z
  .object({
    hash: z
      .string()
      .trim()
      .min(1)
      .max(512)
      .openapi({ description: "Identifies the user across devices", example: "9f86d081884c7d65" }),
    e2e_id: z
      .string()
      .trim()
      .min(1)
      .max(512)
      .openapi({ description: "The user's id at the end-to-end encryption provider", example: "e2e-user-42" }),
  })
  .openapi("EncryptionData");

export const putEncryption = createRoute({
  method: "put",
  operationId: "putEncryption",
  path: "/apps/buzz/encryption",
  tags,
  summary: "Save the caller's end-to-end encryption identifiers",
  security: bearerSecurity,
  middleware: [requirePerson] as const,
  request: { body: { required: true, content: { "application/json": { schema: EncryptionSchema } } } },
  responses: {
    200: jsonContent(EncryptionSchema, "The saved encryption data"),
    ...errorResponses(400, 401, 403, 413, 429),
  },
});

/** The TwiML/TeXML answer (docs/providers.md, "Answering in TwiML"). */
const TwimlSchema = z.string().openapi({
  description:
    "Asked for by `Accept: application/xml` or `?answer=twiml`: a trusted call is " +
    "`<Response><Dial><Client>person-{user_id}</Client></Dial></Response>` (or `<Number>` of the member's phone, " +
    'as the deployment chose), anything else `<Response><Reject reason="rejected"/></Response>`. Refusals keep ' +
    "their status with a `<Reject>` body and their sentence in `Lookup-Error`.",
  example: '<?xml version="1.0" encoding="UTF-8"?><Response><Reject reason="rejected"/></Response>',
});

const lookupResponses = {
  200: {
    content: {
      "application/json": { schema: TrustLookupResultSchema },
      "application/xml": { schema: TwimlSchema },
    },
    description:
      "Whether the call may ring; `trusted: false` (never an error) for any input that matches no trusted caller. " +
      "`Lookup-Problem` names a missing or unreadable number.",
    headers: LookupProblemHeaders,
  },
  ...errorResponses(401, 403, 413, 429, 503),
};

/** The provider's token as a bearer token, or as the HTTP Basic password (docs/decisions.md, "Auth"). */
const providerSecurity = [...bearerSecurity, { basicAuth: [] }];

const trustLookupDescription =
  "For the telephony provider (service token with scope `calls:lookup`, as a bearer token or as the HTTP Basic " +
  "password) while a call rings a secure number. Each number is given as code + number, whole in E.164 " +
  "(`number=+12025550101`), or by Twilio's and Telnyx's names (`To`/`From`, `Called`/`Caller`); the seed's " +
  "fields win when both are present. Never answers an error for its input: anything missing, unparseable or " +
  "unknown is `trusted: false`, and a missing or unreadable number is named in the `Lookup-Problem` header. " +
  "`user_id` is the member holding the receiving number, 0 when none; an untrusted call to a member is " +
  "recorded as blocked. The caller's verification (STIR/SHAKEN: `StirVerstat`, `verstat`, " +
  "`shaken_stir_attestation`/`shaken_stir_validated`) is read too: a failed one is never trusted, and a member in " +
  "strict mode rings only for level A. A token with a signing configuration answers only requests its provider " +
  "signed (403 otherwise); a Telnyx-signed token answers only POSTs, reads its fields from the signed body alone " +
  "and takes each signed request once (403 for a replay). Integration guide: docs/providers.md in the repository.";

export const trustLookupGet = createRoute({
  method: "get",
  operationId: "trustLookupGet",
  path: "/apps/buzz/trust-lookup",
  tags,
  summary: "May this call ring the member's phone?",
  description: trustLookupDescription,
  security: providerSecurity,
  middleware: [basicChallenge, requireAuth({ scope: "calls:lookup" }), requireProviderSignature] as const,
  request: { query: TrustLookupQuery },
  responses: lookupResponses,
});

/** Documented by reference only, so no validator runs: the handler reads any body itself. */
const trustLookupBody = { $ref: "#/components/schemas/TrustLookupRequest" };

export const trustLookupPost = createRoute({
  method: "post",
  operationId: "trustLookupPost",
  path: "/apps/buzz/trust-lookup",
  tags,
  summary: "May this call ring the member's phone? (fields in the body)",
  description: `${trustLookupDescription} Same fields as the GET, as JSON or \`application/x-www-form-urlencoded\`.`,
  security: providerSecurity,
  middleware: [basicChallenge, requireAuth({ scope: "calls:lookup" }), requireProviderSignature] as const,
  request: {
    body: {
      content: {
        "application/json": { schema: trustLookupBody },
        "application/x-www-form-urlencoded": { schema: trustLookupBody },
      },
    },
  },
  responses: lookupResponses,
});

export const callLookup = createRoute({
  method: "get",
  operationId: "callLookup",
  path: "/apps/buzz/call-lookup",
  tags,
  summary: "Who is calling: details of a trusted caller",
  description:
    "For the telephony provider (scope `calls:lookup`) or the receiving member (person token; the receiving " +
    "number must be their own secure number, else 404). A call that would not be trusted answers three empty " +
    "arrays: nothing is revealed about untrusted numbers.",
  security: bearerSecurity,
  middleware: [basicChallenge, requireAuth({ person: true, scope: "calls:lookup" }), requireProviderSignature] as const,
  request: { query: CallLookupQuery },
  responses: {
    200: jsonContent(CallLookupResultSchema, "The caller's contacts, people and companies"),
    ...errorResponses(400, 401, 403, 404, 429, 503),
  },
});

export const heartbeat = createRoute({
  method: "get",
  operationId: "heartbeat",
  path: "/apps/buzz/heartbeat",
  tags,
  summary: "App heartbeat: what changed, and the caller's secure number",
  description:
    "Call on app open or focus and every five minutes of use. Assigns a secure number from the pool on the " +
    "first call (one per person, whatever the concurrency); `secure_number` is null while the pool is empty.",
  security: bearerSecurity,
  middleware: [requirePerson] as const,
  responses: {
    200: jsonContent(HeartbeatSchema, "Change times and the secure number"),
    ...errorResponses(401, 403, 429),
  },
});

export const listBlocked = createRoute({
  method: "get",
  operationId: "listBlocked",
  path: "/apps/buzz/blocked",
  tags,
  summary: "The caller's 100 most recent blocked calls, newest first",
  security: bearerSecurity,
  middleware: [requirePerson] as const,
  responses: {
    200: { ...jsonContent(z.array(BlockedCallSchema), "Blocked calls"), headers: UnlistedBlockedHeaders },
    ...errorResponses(401, 403, 429),
  },
});

export const createActivity = createRoute({
  method: "post",
  operationId: "createActivity",
  path: "/apps/buzz/activity",
  tags,
  summary: "Record a chat or call activity",
  description:
    "The caller must be the sender or the receiver (else 403). `chat_*` types need `message` and `message_id`. " +
    "Idempotent on (sender, `message_id`): a retry answers the first record and creates nothing; `Idempotency-Key` as on every creating POST.",
  security: bearerSecurity,
  middleware: [requirePerson, idempotent("person", "activity")] as const,
  request: {
    headers: IdempotencyHeaders,
    body: { required: true, content: { "application/json": { schema: ActivityCreateSchema } } },
  },
  responses: {
    200: {
      ...jsonContent(ActivityCreatedSchema, "The recorded activity (the first one, on a retry)"),
      headers: replayedHeader,
    },
    ...errorResponses(400, 401, 403, 409, 413, 422, 429),
  },
});

export const listActivity = createRoute({
  method: "get",
  operationId: "listActivity",
  path: "/apps/buzz/activity/{id}",
  tags,
  summary: "The caller's activity feed after an id",
  description:
    "Oldest first, at most `limit`; page on by passing the last id received. Messages (`chat_*`) show to both " +
    "parties; a call record only to the person who recorded it (its sender for `outgoing_*`, its receiver for " +
    "`incoming_*`). A record was received by the caller when `receivable_id` is theirs, sent when `sendable_id` " +
    "is. An `id` that is not a number answers 404.",
  security: bearerSecurity,
  middleware: [requirePerson] as const,
  request: { params: ActivityParams, query: ActivityQuery },
  responses: {
    200: jsonContent(z.array(ActivitySchema), "Activities"),
    ...errorResponses(400, 401, 403, 404, 429),
  },
});

export const clearHistory = createRoute({
  method: "delete",
  operationId: "clearHistory",
  path: "/apps/buzz/clear",
  tags,
  summary: "Development only: wipe the caller's activity and blocked calls",
  description: "Exists only when `ENVIRONMENT` is `development`; elsewhere it is 404 like any unknown route.",
  security: bearerSecurity,
  middleware: [developmentOnly, requirePerson] as const,
  responses: { 204: { description: "Wiped" }, ...errorResponses(401, 403, 404, 429) },
});

/* ---------- the live stream (docs/realtime.md) ---------- */

const streamDescription =
  "A WebSocket (send `Upgrade: websocket`; a plain GET answers 426) carrying the caller's events as they happen, " +
  'each one JSON text frame `{"type", "data"}`: `activity` (a new record of the caller\'s feed, as ' +
  "GET /apps/buzz/activity/{id} shows it), `trust_request` (as GET /contacts/requests shows one), `contacts` " +
  '(`{"updated_at"}`: the caller\'s contacts changed), `blocked_call` (as GET /apps/buzz/blocked shows one), ' +
  "`resync` (a resume missed more than 500 records: read GET /apps/buzz/activity/{id}). Activity comes once per " +
  "connection, in id order. Authenticated by a person token (`Authorization: Bearer`) or `?ticket=`. Send the text " +
  "`ping` to get `pong`. At most 10 connections per person: an 11th closes the oldest (close code 4000); a revoked " +
  "or expired token's connections close within 60 s (4001). Guide: docs/realtime.md in the repository.";

export const openStream = createRoute({
  method: "get",
  operationId: "openStream",
  path: "/apps/buzz/stream",
  tags,
  summary: "The caller's live events (WebSocket)",
  description: streamDescription,
  // A person token, or none with `?ticket=`.
  security: [...bearerSecurity, {}],
  request: { query: StreamQuery },
  responses: {
    101: { description: "Switching Protocols: the WebSocket is open; events follow as text frames" },
    ...errorResponses(400, 401, 403, 426, 429, 503),
  },
});

export const createStreamTicket = createRoute({
  method: "post",
  operationId: "createStreamTicket",
  path: "/apps/buzz/stream/tickets",
  tags,
  summary: "A one-use ticket to open the stream from a browser",
  description:
    "Browsers cannot set an Authorization header on a WebSocket: ask for a ticket with the person token, then " +
    "open `GET /apps/buzz/stream?ticket=…` within 60 s. A ticket is signed by the server and bound to the " +
    "person and the token that asked for it; it opens one connection, only while that token is still valid, " +
    "and the connection lives as long as the token.",
  security: bearerSecurity,
  middleware: [requirePerson] as const,
  responses: {
    201: jsonContent(StreamTicketSchema, "The ticket"),
    ...errorResponses(401, 403, 429, 503),
  },
});
