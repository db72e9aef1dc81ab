import { z } from "@hono/zod-openapi";
import { callPolicies } from "../../domain/caller-verification";

/* ---------- settings ---------- */

const callsField = z.enum(callPolicies).openapi({
  description:
    "Who may ring the caller's secure number: `everyone` they trust (the default), or `verified_only`: only " +
    "callers the carrier verified at attestation level A (STIR/SHAKEN), even when trusted",
  example: "verified_only",
});

export const SettingsSchema = z.object({ calls: callsField }).openapi("PersonSettings");

export const SettingsChangeSchema = z.object({ calls: callsField.optional() }).strict().openapi("PersonSettingsChange");
