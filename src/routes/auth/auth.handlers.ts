import type { Phone } from "../../lib/phone";
import { CODE_TTL_MS } from "../../services/codes";
import { requestSignInCode, signIn as signInWith, type Address } from "../../services/sign-in";
import type { AppRouteHandler } from "../../types";
import { clientIp, codeSettings } from "../request-context";
import type * as routes from "./auth.routes";

/** The one address of a body the schema checked (exactly one of the two). */
const addressOf = (body: { email?: string | undefined; phone?: Phone | undefined }): Address =>
  body.email !== undefined ? { email: body.email } : { phone: body.phone! };

export const requestCode: AppRouteHandler<typeof routes.requestCode> = async (c) => {
  const body = c.req.valid("json");
  await requestSignInCode(c.var.deps, codeSettings(c), addressOf(body), clientIp(c), (work) =>
    c.executionCtx.waitUntil(work),
  );
  return c.json({ expires_in: CODE_TTL_MS / 1000 }, 202);
};

export const signIn: AppRouteHandler<typeof routes.signIn> = async (c) => {
  const body = c.req.valid("json");
  const signedIn = await signInWith(c.var.deps, c.var.deps.codes.key, addressOf(body), body.code, body.device_name);
  return c.json(signedIn, 201);
};
