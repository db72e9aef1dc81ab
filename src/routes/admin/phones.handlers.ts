import { setPageHeaders } from "../../lib/pagination";
import * as phones from "../../services/company-phones";
import type { AppRouteHandler } from "../../types";
import type * as routes from "./phones.routes";

export const listCompanyPhones: AppRouteHandler<typeof routes.listCompanyPhones> = async (c) => {
  const { status, ...page } = c.req.valid("query");
  const { phones: list, total } = await phones.listPhonesByStatus(c.var.deps, status, page);
  setPageHeaders(c, page, total);
  return c.json(list, 200);
};

export const verifyCompanyPhone: AppRouteHandler<typeof routes.verifyCompanyPhone> = async (c) =>
  c.json(await phones.verifyCompanyPhone(c.var.deps, c.req.valid("param").id), 200);

export const rejectCompanyPhone: AppRouteHandler<typeof routes.rejectCompanyPhone> = async (c) => {
  await phones.rejectCompanyPhone(c.var.deps, c.req.valid("param").id);
  return c.body(null, 204);
};

export const removeCompanyPhone: AppRouteHandler<typeof routes.removeCompanyPhone> = async (c) => {
  await phones.removePhoneOfAnyCompany(c.var.deps, c.req.valid("param").id);
  return c.body(null, 204);
};
