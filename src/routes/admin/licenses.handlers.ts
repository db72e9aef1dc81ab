import * as licenses from "../../services/licenses";
import type { AppRouteHandler } from "../../types";
import type * as routes from "./licenses.routes";

export const putLicense: AppRouteHandler<typeof routes.putLicense> = async (c) => {
  const { currency, ...entry } = c.req.valid("json");
  const license = await licenses.putCatalogEntry(c.var.deps, c.req.valid("param").id, {
    ...entry,
    currency: currency ?? "USD",
  });
  return c.json(license, 200);
};

export const retireLicense: AppRouteHandler<typeof routes.retireLicense> = async (c) => {
  await licenses.retireLicense(c.var.deps, c.req.valid("param").id);
  return c.body(null, 204);
};
