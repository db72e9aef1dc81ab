import { rotateProviderSecrets } from "../../services/provider-secrets";
import { setProviderSigning } from "../../services/provider-signing";
import type { AppRouteHandler } from "../../types";
import type * as routes from "./providers.routes";

export const putProviderSigning: AppRouteHandler<typeof routes.putProviderSigning> = async (c) => {
  const input = c.req.valid("json");
  const signing =
    input.kind === "twilio"
      ? { kind: "twilio" as const, authToken: input.auth_token }
      : { kind: "telnyx" as const, publicKey: input.public_key };
  return c.json(await setProviderSigning(c.var.deps, c.req.valid("param").token_id, signing), 200);
};

export const deleteProviderSigning: AppRouteHandler<typeof routes.deleteProviderSigning> = async (c) =>
  c.json(await setProviderSigning(c.var.deps, c.req.valid("param").token_id, null), 200);

export const rotateProviderKeys: AppRouteHandler<typeof routes.rotateProviderKeys> = async (c) =>
  c.json(await rotateProviderSecrets(c.var.deps), 200);
