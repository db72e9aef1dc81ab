import { createRoute, z } from "@hono/zod-openapi";
import { bearerSecurity, errorResponses, jsonContent } from "../../lib/openapi";
import { requirePerson } from "../../middleware/auth";
import { MeSchema, MyPhoneParams, MyPhoneSchema, SettingsChangeSchema, SettingsSchema } from "./me.schemas";

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

export const confirmMyPhone = createRoute({
  method: "post",
  operationId: "confirmMyPhone",
  path: "/me/phones/{id}/confirm",
  tags,
  summary: "Confirm a phone as the caller's own",
  description:
    "From now on calls from this number are trusted by the people who trust the caller, and a trust request " +
    "sent to the number reaches the caller. Confirming again changes nothing. A number another person " +
    "confirmed is a 409.",
  security: bearerSecurity,
  middleware: [requirePerson] as const,
  request: { params: MyPhoneParams },
  responses: {
    200: jsonContent(MyPhoneSchema, "The phone, confirmed"),
    ...errorResponses(401, 403, 404, 409, 429),
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
