import { notFound } from "../../lib/errors";
import { setPageHeaders } from "../../lib/pagination";
import * as employees from "../../services/employees";
import { getExposureHistory, listExposures as listExposurePage } from "../../services/employee-exposures";
import { emitEvent } from "../../services/events";
import { removeFromCompany } from "../../services/memberships";
import * as trustIndex from "../../services/trust-index";
import { loadPeople, loadPerson } from "../../services/people";
import type { AppRouteHandler } from "../../types";
import type * as routes from "./employees.routes";

export const listEmployees: AppRouteHandler<typeof routes.listEmployees> = async (c) => {
  const { search, ...page } = c.req.valid("query");
  const { companyId } = c.var.company;
  const { ids, total } = await employees.listEmployeeIds(c.var.db, companyId, search || null, page);
  setPageHeaders(c, page, total);
  return c.json(await loadPeople(c.var.db, companyId, ids), 200);
};

export const getEmployee: AppRouteHandler<typeof routes.getEmployee> = async (c) => {
  const { id } = c.req.valid("param");
  const person = await loadPerson(c.var.db, c.var.company.companyId, id);
  if (!person) throw notFound(`employee ${id} does not exist`);
  return c.json(person, 200);
};

export const createEmployee: AppRouteHandler<typeof routes.createEmployee> = async (c) => {
  const { db, company } = c.var;
  const id = await employees.createEmployee(db, company, c.req.valid("json"), new Date());
  // Joining the company makes its phones trusted for calls to this person.
  await trustIndex.rebuildFor(db, c.env.TRUST_INDEX, id);
  const person = (await loadPerson(db, company.companyId, id))!;
  await emitEvent(db, c.env.WEBHOOK_QUEUE, company.companyId, "person:created", person);
  return c.json(person, 200);
};

export const updateEmployee: AppRouteHandler<typeof routes.updateEmployee> = async (c) => {
  const { db, company } = c.var;
  const { id } = c.req.valid("param");
  await employees.updateEmployee(db, company, id, c.req.valid("json"), new Date());
  // New phones change what the people who trusted this person trust.
  await trustIndex.refresh(db, c.env.TRUST_INDEX, await trustIndex.dependentsOf(db, id));
  const person = (await loadPerson(db, company.companyId, id))!;
  await emitEvent(db, c.env.WEBHOOK_QUEUE, company.companyId, "person:updated", person);
  return c.json(person, 200);
};

export const removeEmployee: AppRouteHandler<typeof routes.removeEmployee> = async (c) => {
  const { db, company } = c.var;
  const { id } = c.req.valid("param");
  await employees.assertRemovable(db, company, id);
  await removeFromCompany({ db, kv: c.env.TRUST_INDEX, queue: c.env.WEBHOOK_QUEUE }, company.companyId, id);
  return c.body(null, 204);
};

export const listExposures: AppRouteHandler<typeof routes.listExposures> = async (c) => {
  const { since, employees: employeeIds, status, exposed, ...page } = c.req.valid("query");
  // `exposed` defaults to true, unless statuses are named: then they decide (docs/decisions.md).
  const current = exposed ?? status === null;
  const statuses = current ? (status ?? ["pending", "in_progress"]).filter((s) => s !== "closed") : status;
  const { items, total } = await listExposurePage(
    c.var.db,
    c.var.company.companyId,
    { since: since ?? null, employees: employeeIds, statuses },
    page,
  );
  setPageHeaders(c, page, total);
  return c.json(items, 200);
};

export const exposureHistory: AppRouteHandler<typeof routes.exposureHistory> = async (c) => {
  const { id } = c.req.valid("param");
  const history = await getExposureHistory(c.var.db, c.var.company.companyId, id);
  if (!history) throw notFound(`exposure ${id} does not exist`);
  return c.json(history, 200);
};
