import { personId } from "../../middleware/auth";
import * as companyTrust from "../../services/company-trust";
import type { AppRouteHandler } from "../../types";
import type * as routes from "./company-trust.routes";

export const listCompanyTrust: AppRouteHandler<typeof routes.listCompanyTrust> = async (c) =>
  c.json(await companyTrust.listCompanyTrust(c.var.deps, personId(c.var.principal)), 200);

export const setCompanyTrust: AppRouteHandler<typeof routes.setCompanyTrust> = async (c) => {
  const { company_id } = c.req.valid("param");
  const { trust } = c.req.valid("json");
  await companyTrust.setCompanyTrust(c.var.deps, personId(c.var.principal), company_id, trust);
  return c.json({ company_id, trust }, 200);
};
