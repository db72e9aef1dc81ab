import { accepted } from "../../lib/answer";
import { badRequest } from "../../lib/errors";
import { CODE_TTL_MS, INVALID_CODE } from "../../services/codes";
import { listDevices, revokeDevice } from "../../services/devices";
import { clientIp, codeSettings } from "../request-context";
import { personId } from "../../middleware/auth";
import * as myPhones from "../../services/my-phones";
import { pushRegistrationView, registerPush, unregisterPush } from "../../services/push";
import { changeSettings, readSettings } from "../../services/person-settings";
import { ownAccount } from "../../services/own-account";
import type { AppRouteHandler, Principal } from "../../types";
import type * as routes from "./me.routes";

/* ---------- GET /me ---------- */

export const getMe: AppRouteHandler<typeof routes.getMe> = async (c) => {
  const { ok: _, ...me } = accepted(await ownAccount(c.var.deps, personId(c.var.principal)));
  return c.json({ ...me, token_kind: "person" as const }, 200);
};

/* ---------- the caller's phones ---------- */

export const listMyPhones: AppRouteHandler<typeof routes.listMyPhones> = async (c) =>
  c.json(await myPhones.listMyPhones(c.var.deps, personId(c.var.principal)), 200);

export const addMyPhone: AppRouteHandler<typeof routes.addMyPhone> = async (c) => {
  const { phone, created } = await myPhones.addMyPhone(
    c.var.deps,
    personId(c.var.principal),
    c.req.valid("json").phone,
  );
  return created ? c.json(phone, 201) : c.json(phone, 200);
};

export const verifyMyPhone: AppRouteHandler<typeof routes.verifyMyPhone> = async (c) => {
  const me = personId(c.var.principal);
  await myPhones.sendPhoneCode(c.var.deps, codeSettings(c), me, c.req.valid("param").id, clientIp(c));
  return c.json({ expires_in: CODE_TTL_MS / 1000 }, 202);
};

export const confirmMyPhone: AppRouteHandler<typeof routes.confirmMyPhone> = async (c) => {
  const code = c.req.valid("json")?.code;
  if (code === undefined) throw badRequest(INVALID_CODE);
  const me = personId(c.var.principal);
  const phone = await myPhones.confirmMyPhone(c.var.deps, c.var.deps.codes.key, me, c.req.valid("param").id, code);
  return c.json(phone, 200);
};

/* ---------- the caller's devices ---------- */

export const listMyDevices: AppRouteHandler<typeof routes.listMyDevices> = async (c) => {
  const principal = c.var.principal!;
  return c.json(await listDevices(c.var.deps, personId(principal), principal.tokenId), 200);
};

export const deleteMyDevice: AppRouteHandler<typeof routes.deleteMyDevice> = async (c) => {
  await revokeDevice(c.var.deps, personId(c.var.principal), c.req.valid("param").id);
  return c.body(null, 204);
};

/* ---------- push ---------- */

/** The caller as the push services take it: their person and the device asking. */
const caller = (principal: Principal | null) => ({ personId: personId(principal), tokenId: principal!.tokenId });

export const putMyDevicePush: AppRouteHandler<typeof routes.putMyDevicePush> = async (c) => {
  const registration = await registerPush(
    c.var.deps,
    caller(c.var.principal),
    c.req.valid("param").id,
    c.req.valid("json"),
  );
  return c.json(pushRegistrationView(registration), 200);
};

export const deleteMyDevicePush: AppRouteHandler<typeof routes.deleteMyDevicePush> = async (c) => {
  await unregisterPush(c.var.deps, caller(c.var.principal), c.req.valid("param").id);
  return c.body(null, 204);
};

/* ---------- settings ---------- */

export const getSettings: AppRouteHandler<typeof routes.getSettings> = async (c) =>
  c.json(await readSettings(c.var.deps, personId(c.var.principal)), 200);

export const putSettings: AppRouteHandler<typeof routes.putSettings> = async (c) =>
  c.json(await changeSettings(c.var.deps, personId(c.var.principal), c.req.valid("json")), 200);
