import { notFound } from "../../lib/errors";
import { pageWindow, setPageHeaders } from "../../lib/pagination";
import { personId } from "../../middleware/auth";
import * as contacts from "../../services/contacts";
import { companiesWithEmployees } from "../../services/coworkers";
import * as trustIndex from "../../services/trust-index";
import * as trustRequests from "../../services/trust-requests";
import type { AppRouteHandler } from "../../types";
import type * as routes from "./contacts.routes";

export const listContacts: AppRouteHandler<typeof routes.listContacts> = async (c) => {
  const { page, per_page, updated_at, include } = c.req.valid("query");
  const { items, total } = await contacts.listContacts(c.var.db, personId(c.var.principal), {
    since: updated_at,
    include,
    ...pageWindow({ page, per_page }),
  });
  setPageHeaders(c, { page, per_page }, total);
  return c.json(items, 200);
};

// Every write below rewrites the owner's trusted-number set (DECISIONS §3).

export const syncContacts: AppRouteHandler<typeof routes.syncContacts> = async (c) => {
  const owner = personId(c.var.principal);
  const saved = await contacts.saveContacts(c.var.db, owner, c.req.valid("json"));
  await trustIndex.rebuildFor(c.var.db, c.env.TRUST_INDEX, owner);
  return c.json(saved, 200);
};

export const getContact: AppRouteHandler<typeof routes.getContact> = async (c) => {
  const { id } = c.req.valid("param");
  const [contact] = await contacts.loadContacts(c.var.db, personId(c.var.principal), [id]);
  if (!contact) throw notFound(`contact ${id} does not exist`);
  return c.json(contact, 200);
};

export const putContact: AppRouteHandler<typeof routes.putContact> = async (c) => {
  const { id } = c.req.valid("param");
  const owner = personId(c.var.principal);
  if (!(await contacts.ownsContact(c.var.db, owner, id))) throw notFound(`contact ${id} does not exist`);
  const [saved] = await contacts.saveContacts(c.var.db, owner, [{ ...c.req.valid("json"), id }]);
  // Deleted by another request in between.
  if (!saved) throw notFound(`contact ${id} does not exist`);
  await trustIndex.rebuildFor(c.var.db, c.env.TRUST_INDEX, owner);
  return c.json(saved, 200);
};

export const deleteContact: AppRouteHandler<typeof routes.deleteContact> = async (c) => {
  const { id } = c.req.valid("param");
  const owner = personId(c.var.principal);
  if (!(await contacts.deleteContact(c.var.db, owner, id))) throw notFound(`contact ${id} does not exist`);
  await trustIndex.rebuildFor(c.var.db, c.env.TRUST_INDEX, owner);
  return c.json({ success: true as const }, 200);
};

export const clearContacts: AppRouteHandler<typeof routes.clearContacts> = async (c) => {
  const owner = personId(c.var.principal);
  await contacts.clearContacts(c.var.db, owner);
  await trustIndex.rebuildFor(c.var.db, c.env.TRUST_INDEX, owner);
  return c.body(null, 204);
};

export const clearContactsOf: AppRouteHandler<typeof routes.clearContactsOf> = async (c) => {
  const { id } = c.req.valid("param");
  const owner = personId(c.var.principal);
  if (id !== owner) throw notFound(`person ${id} does not exist`);
  await contacts.clearContacts(c.var.db, owner);
  await trustIndex.rebuildFor(c.var.db, c.env.TRUST_INDEX, owner);
  return c.body(null, 204);
};

export const listTrustRequests: AppRouteHandler<typeof routes.listTrustRequests> = async (c) => {
  return c.json(await trustRequests.pendingRequests(c.var.db, personId(c.var.principal)), 200);
};

export const createTrustRequest: AppRouteHandler<typeof routes.createTrustRequest> = async (c) => {
  const { contact_reason, ...target } = c.req.valid("json");
  await trustRequests.askForTrust(c.var.db, personId(c.var.principal), target, contact_reason);
  return c.json({ success: true as const }, 201);
};

export const decideTrust: AppRouteHandler<typeof routes.decideTrust> = async (c) => {
  const { id } = c.req.valid("param");
  const { trusted } = c.req.valid("json");
  const me = personId(c.var.principal);
  if (!(await trustRequests.decideTrust(c.var.db, me, id, trusted))) {
    throw notFound(`person ${id} has not asked you for trust`);
  }
  await trustIndex.rebuildFor(c.var.db, c.env.TRUST_INDEX, me);
  return c.json({ id, trusted }, 201);
};

export const listCompanyEmployees: AppRouteHandler<typeof routes.listCompanyEmployees> = async (c) => {
  return c.json(await companiesWithEmployees(c.var.db, personId(c.var.principal)), 200);
};

export const getCompanyEmployees: AppRouteHandler<typeof routes.getCompanyEmployees> = async (c) => {
  const { id } = c.req.valid("param");
  const [entry] = await companiesWithEmployees(c.var.db, personId(c.var.principal), id);
  if (!entry) throw notFound(`company ${id} does not exist`);
  return c.json(entry, 200);
};
