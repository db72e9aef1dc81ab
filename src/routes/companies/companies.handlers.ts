import { notFound } from "../../lib/errors";
import * as companies from "../../services/companies";
import type { AppRouteHandler } from "../../types";
import type * as routes from "./companies.routes";

export const getCompany: AppRouteHandler<typeof routes.getCompany> = async (c) => {
  const { companyId } = c.var.company;
  const company = await companies.getCompany(c.var.db, companyId);
  if (!company) throw notFound(`company ${companyId} does not exist`);
  return c.json(company, 200);
};

export const listRoles: AppRouteHandler<typeof routes.listRoles> = async (c) => {
  return c.json(await companies.listRoles(c.var.db, c.var.company.companyId), 200);
};

export const listSites: AppRouteHandler<typeof routes.listSites> = async (c) => {
  return c.json(await companies.listSites(c.var.db), 200);
};

export const getSite: AppRouteHandler<typeof routes.getSite> = async (c) => {
  const { id } = c.req.valid("param");
  const site = await companies.getSite(c.var.db, id);
  if (!site) throw notFound(`site ${id} does not exist`);
  return c.json(site, 200);
};
