import { accepted } from "../../lib/answer";
import { badRequest } from "../../lib/errors";
import { setPageHeaders } from "../../lib/pagination";
import * as employees from "../../services/employees";
import { getExposureHistory, listExposures as listExposurePage } from "../../services/employee-exposures";
import type { PersonBody } from "../../services/people";
import type { AppRouteHandler } from "../../types";
import type * as routes from "./employees.routes";

export const listEmployees: AppRouteHandler<typeof routes.listEmployees> = async (c) => {
  const { search, after, ...page } = c.req.valid("query");
  if (after !== undefined && page.page !== 1) throw badRequest("`after` continues from an id: use it with `page` 1");
  const { body, total, last } = await employees.listEmployees(
    c.var.deps,
    c.var.company.companyId,
    search || null,
    page,
    c.var.company.listVersion,
    after ?? null,
    c.var.company.company.scansInObject,
  );
  setPageHeaders(c, page, total, after === undefined ? undefined : { last });
  // Already JSON, written straight from the rows (services/people.ts) and encoded: sent as it is,
  // never parsed and serialised again.
  return c.body(body, 200, { "Content-Type": "application/json" }) as unknown as ReturnType<
    typeof c.json<PersonBody[], 200>
  >;
};

export const getEmployee: AppRouteHandler<typeof routes.getEmployee> = async (c) => {
  const { id } = c.req.valid("param");
  const { company } = c.var.company;
  const { person } = accepted(await employees.getEmployee(c.var.deps, company.id, id, company.scansInObject));
  return c.json(person, 200);
};

export const createEmployee: AppRouteHandler<typeof routes.createEmployee> = async (c) => {
  return c.json(await employees.createEmployee(c.var.deps, c.var.company, c.req.valid("json")), 200);
};

export const createEmployeesBulk: AppRouteHandler<typeof routes.createEmployeesBulk> = async (c) => {
  const created = await employees.createEmployees(c.var.deps, c.var.company, c.req.valid("json"), { bulk: true });
  return c.json(created, 200);
};

export const updateEmployee: AppRouteHandler<typeof routes.updateEmployee> = async (c) => {
  const { id } = c.req.valid("param");
  return c.json(await employees.updateEmployee(c.var.deps, c.var.company, id, c.req.valid("json")), 200);
};

export const removeEmployee: AppRouteHandler<typeof routes.removeEmployee> = async (c) => {
  const { id } = c.req.valid("param");
  await employees.removeEmployee(c.var.deps, c.var.company, id);
  return c.body(null, 204);
};

export const listExposures: AppRouteHandler<typeof routes.listExposures> = async (c) => {
  const { since, employees: employeeIds, status, exposed, ...page } = c.req.valid("query");
  // `exposed` defaults to true, unless statuses are named: then they decide (docs/decisions.md).
  const current = exposed ?? status === null;
  const statuses = current ? (status ?? ["pending", "in_progress"]).filter((s) => s !== "closed") : status;
  const { items, total } = await listExposurePage(
    c.var.deps,
    c.var.company.company,
    { since: since ?? null, employees: employeeIds, statuses },
    page,
  );
  setPageHeaders(c, page, total);
  return c.json(items, 200);
};

export const exposureHistory: AppRouteHandler<typeof routes.exposureHistory> = async (c) => {
  const { id } = c.req.valid("param");
  const { history } = accepted(await getExposureHistory(c.var.deps, c.var.company.company, id));
  return c.json(history, 200);
};
