import { accepted } from "../../lib/answer";
import { personId } from "../../middleware/auth";
import * as licenses from "../../services/licenses";
import type { AppRouteHandler } from "../../types";
import type * as routes from "./licenses.routes";

/* One handler per operation serves both the `/licenses` and the `/companies/{company_id}/licenses` form. */

export const listLicenses: AppRouteHandler<typeof routes.listLicenses> = async (c) => {
  return c.json(await licenses.listCompanyLicenses(c.var.deps, c.var.company.companyId), 200);
};

export const getLicense: AppRouteHandler<typeof routes.getLicense> = async (c) => {
  const { id } = c.req.valid("param");
  const { license } = accepted(await licenses.getCompanyLicense(c.var.deps, c.var.company.companyId, id));
  return c.json(license, 200);
};

export const purchaseLicenses: AppRouteHandler<typeof routes.purchaseLicenses> = async (c) => {
  const { deps, company } = c.var;
  await licenses.purchaseLicenses(deps, company.companyId, personId(c.var.principal), c.req.valid("json"), new Date());
  return c.json(await licenses.listCompanyLicenses(deps, company.companyId), 201);
};
