import { unauthorized } from "../../lib/errors";
import { personId } from "../../middleware/auth";
import { saveEncryption } from "../../services/encryption";
import type { AppRouteHandler } from "../../types";
import type * as routes from "./buzz.routes";

export const putEncryption: AppRouteHandler<typeof routes.putEncryption> = async (c) => {
  const saved = await saveEncryption(c.var.db, personId(c.var.principal), c.req.valid("json"));
  // The token outlived its person (deleted within the token cache window).
  if (!saved) throw unauthorized("the bearer token's person no longer exists");
  return c.json(saved, 200);
};
