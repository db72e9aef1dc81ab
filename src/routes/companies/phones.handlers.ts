import * as phones from "../../services/company-phones";
import type { AppRouteHandler } from "../../types";
import type * as routes from "./phones.routes";

export const listCompanyPhones: AppRouteHandler<typeof routes.listCompanyPhones> = async (c) =>
  c.json(await phones.listCompanyPhones(c.var.deps, c.var.company.companyId), 200);

export const addCompanyPhone: AppRouteHandler<typeof routes.addCompanyPhone> = async (c) => {
  const { label, ...phone } = c.req.valid("json");
  return c.json(await phones.addCompanyPhone(c.var.deps, c.var.company.companyId, phone, label || null), 201);
};

export const removeCompanyPhone: AppRouteHandler<typeof routes.removeCompanyPhone> = async (c) => {
  await phones.removeCompanyPhone(c.var.deps, c.var.company.companyId, c.req.valid("param").id);
  return c.body(null, 204);
};
