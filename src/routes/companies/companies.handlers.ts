import { accepted } from "../../lib/answer";
import * as companies from "../../services/companies";
import type { AppRouteHandler } from "../../types";
import type * as routes from "./companies.routes";

export const getCompany: AppRouteHandler<typeof routes.getCompany> = async (c) => {
  // The access check read the company's row with the membership: no second round trip.
  return c.json(companies.toCompany(c.var.company.company), 200);
};

export const listRoles: AppRouteHandler<typeof routes.listRoles> = async (c) => {
  return c.json(await companies.listRoles(c.var.deps, c.var.company.companyId), 200);
};

export const listSites: AppRouteHandler<typeof routes.listSites> = async (c) => {
  return c.json(await companies.listSites(c.var.deps), 200);
};

export const getSite: AppRouteHandler<typeof routes.getSite> = async (c) => {
  const { id } = c.req.valid("param");
  const { site } = accepted(await companies.getSite(c.var.deps, id));
  return c.json(site, 200);
};
