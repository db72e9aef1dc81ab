import { createRoute, z } from "@hono/zod-openapi";
import { bearerSecurity, errorResponses, jsonContent } from "../../lib/openapi";
import { requirePerson } from "../../middleware/auth";
import { IdempotencyHeaders, idempotent, replayedHeader } from "../../middleware/idempotency";
import { CodeSentSchema, ConfirmCodeSchema } from "../auth/auth.schemas";
import {
  DeviceListItemSchema,
  DeviceParams,
  MeSchema,
  MyPhoneParams,
  MyPhoneSchema,
  NewPhoneSchema,
  NewPushRegistrationSchema,
  PushRegistrationSchema,
  SettingsChangeSchema,
  SettingsSchema,
} from "./me.schemas";

const tags = ["Me"];

/* ---------- GET /me ---------- */

export const getMe = createRoute({
  method: "get",
  operationId: "getMe",
  path: "/me",
  tags,
  summary: "Who the caller is",
  description:
    "The caller's person id, names, secure number and companies with their roles, and the kind of token that " +
    "asked. For person tokens; a service token gets 403.",
  security: bearerSecurity,
  middleware: [requirePerson] as const,
  responses: {
    200: jsonContent(MeSchema, "The caller"),
    ...errorResponses(401, 403, 429),
  },
});

/* ---------- the caller's phones ---------- */

export const listMyPhones = createRoute({
  method: "get",
  operationId: "listMyPhones",
  path: "/me/phones",
  tags,
  summary: "The caller's phones",
  description:
    "Every phone on the caller's account, oldest first, with whether the caller confirmed it. Only a confirmed " +
    "phone carries the trust others gave the caller.",
  security: bearerSecurity,
  middleware: [requirePerson] as const,
  responses: {
    200: jsonContent(z.array(MyPhoneSchema), "The caller's phones"),
    ...errorResponses(401, 403, 429),
  },
});

export const addMyPhone = createRoute({
  method: "post",
  operationId: "addMyPhone",
  path: "/me/phones",
  tags,
  summary: "Add a phone to the caller's account",
  description:
    "Adds the number, unconfirmed (201); a number already on the account answers that phone (200), also when two " +
    "adds of it come at once (one row, never two). Prove it with " +
    "`POST /me/phones/{id}/verification` and `…/confirm`. A secure number of the platform → 409.",
  security: bearerSecurity,
  middleware: [requirePerson, idempotent("person")] as const,
  request: {
    headers: IdempotencyHeaders,
    body: { required: true, content: { "application/json": { schema: NewPhoneSchema } } },
  },
  responses: {
    201: { ...jsonContent(MyPhoneSchema, "The phone, added unconfirmed"), headers: replayedHeader },
    200: { ...jsonContent(MyPhoneSchema, "The phone the caller already holds"), headers: replayedHeader },
    ...errorResponses(400, 401, 403, 409, 413, 422, 429),
  },
});

export const verifyMyPhone = createRoute({
  method: "post",
  operationId: "sendMyPhoneCode",
  path: "/me/phones/{id}/verification",
  tags,
  summary: "Send a code to one of the caller's phones",
  description:
    "Sends the phone an SMS with a 6-digit code, valid 10 minutes (a newer code replaces it). Limits: 5 codes an " +
    "hour to one number, 10 a day per person, 20 an hour per client (429 with Retry-After); SMS go only to the " +
    "deployment's countries (400 otherwise). The provider refusing the message → 502, not answering → 503.",
  security: bearerSecurity,
  middleware: [requirePerson] as const,
  request: { params: MyPhoneParams },
  responses: {
    202: jsonContent(CodeSentSchema, "The code is on its way"),
    ...errorResponses(400, 401, 403, 404, 429, 502, 503),
  },
});

export const confirmMyPhone = createRoute({
  method: "post",
  operationId: "confirmMyPhone",
  path: "/me/phones/{id}/confirm",
  tags,
  summary: "Prove a phone with the code sent to it",
  description:
    "With the code of `…/verification`: the phone is confirmed as the caller's own. From then on calls from it " +
    "are trusted by the people who trust the caller and a trust request sent to the number reaches the caller. " +
    "Possession wins: a person who had confirmed the number loses that confirmation (their stream hears " +
    "`phones`). A wrong, spent or expired code, or none → 400 `invalid or expired code`, and nothing changes.",
  security: bearerSecurity,
  middleware: [requirePerson] as const,
  request: {
    params: MyPhoneParams,
    body: { required: false, content: { "application/json": { schema: ConfirmCodeSchema } } },
  },
  responses: {
    200: jsonContent(MyPhoneSchema, "The phone, confirmed"),
    ...errorResponses(400, 401, 403, 404, 413, 429),
  },
});

/* ---------- the caller's devices ---------- */

export const listMyDevices = createRoute({
  method: "get",
  operationId: "listMyDevices",
  path: "/me/devices",
  tags,
  summary: "The caller's devices (their person tokens)",
  description:
    "One per sign-in, oldest first; `current` marks the one asking. A token the operator minted is listed as " +
    "`minted by the operator`. `last_used_on` is the day it was last used (kept to the day).",
  security: bearerSecurity,
  middleware: [requirePerson] as const,
  responses: {
    200: jsonContent(z.array(DeviceListItemSchema), "The caller's devices"),
    ...errorResponses(401, 403, 429),
  },
});

export const deleteMyDevice = createRoute({
  method: "delete",
  operationId: "deleteMyDevice",
  path: "/me/devices/{id}",
  tags,
  summary: "Sign a device out",
  description:
    "Revokes that device's token at once: its open streams close with 4001, its writes are refused at once and " +
    "its reads within a second, everywhere. A device may delete itself (signing out).",
  security: bearerSecurity,
  middleware: [requirePerson] as const,
  request: { params: DeviceParams },
  responses: {
    204: { description: "Revoked" },
    ...errorResponses(401, 403, 404, 429),
  },
});

/* ---------- push: where a device is woken ---------- */

export const putMyDevicePush = createRoute({
  method: "put",
  operationId: "putMyDevicePush",
  path: "/me/devices/{id}/push",
  tags,
  summary: "Register where a device is woken (push)",
  description:
    "One registration per device (this replaces it): a browser's Web Push subscription, an FCM registration " +
    "token or an APNs device token. When a chat, a trust request or a missed call arrives and this device has " +
    'no open stream, it gets a push within seconds carrying only `{"type", "id"}` (`chat`, `trust_request`, ' +
    "`missed_call`); the app then reads what arrived. A push service answering 404 or 410 removes the " +
    "registration; deleting the device removes it too. Only the caller's own devices (else 404). A Web Push " +
    "endpoint must be https on a public host (http://127.0.0.1 only in development) → else 400.",
  security: bearerSecurity,
  middleware: [requirePerson] as const,
  request: {
    params: DeviceParams,
    body: { required: true, content: { "application/json": { schema: NewPushRegistrationSchema } } },
  },
  responses: {
    200: jsonContent(PushRegistrationSchema, "The device's registration"),
    ...errorResponses(400, 401, 403, 404, 413, 429),
  },
});

export const deleteMyDevicePush = createRoute({
  method: "delete",
  operationId: "deleteMyDevicePush",
  path: "/me/devices/{id}/push",
  tags,
  summary: "Stop waking a device (push)",
  description:
    "Removes the device's push registration (none: nothing changes); it keeps its token and its stream. " +
    "Only the caller's own devices (else 404).",
  security: bearerSecurity,
  middleware: [requirePerson] as const,
  request: { params: DeviceParams },
  responses: {
    204: { description: "Removed" },
    ...errorResponses(401, 403, 404, 429),
  },
});

/* ---------- settings ---------- */

export const getSettings = createRoute({
  method: "get",
  operationId: "getMySettings",
  path: "/me/settings",
  tags,
  summary: "The caller's settings",
  security: bearerSecurity,
  middleware: [requirePerson] as const,
  responses: {
    200: jsonContent(SettingsSchema, "The caller's settings"),
    ...errorResponses(401, 403, 429),
  },
});

export const putSettings = createRoute({
  method: "put",
  operationId: "putMySettings",
  path: "/me/settings",
  tags,
  summary: "Change the caller's settings",
  description:
    "`calls: verified_only` (strict mode) lets only callers verified at attestation level A ring, even trusted " +
    "ones; `everyone` goes back to the default. Honoured by every trust-lookup within about 60 s. Fields left " +
    "out stay as they are.",
  security: bearerSecurity,
  middleware: [requirePerson] as const,
  request: { body: { required: true, content: { "application/json": { schema: SettingsChangeSchema } } } },
  responses: {
    200: jsonContent(SettingsSchema, "The caller's settings, changed"),
    ...errorResponses(400, 401, 403, 413, 429),
  },
});
