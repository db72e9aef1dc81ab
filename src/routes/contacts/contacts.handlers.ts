import type { Context } from "hono";
import { accepted } from "../../lib/answer";
import { notFound } from "../../lib/errors";
import { pageWindow, setNextCursor, setPageHeaders } from "../../lib/pagination";
import { personId } from "../../middleware/auth";
import * as contacts from "../../services/contacts";
import { companiesWithEmployees, companyWithEmployees } from "../../services/coworkers";
import * as trustRequests from "../../services/trust-requests";
import type { AppEnv, AppRouteHandler } from "../../types";
import type * as routes from "./contacts.routes";

/** Work after the answer: the links a read took from the trust index, handed to the owner's object to keep. */
const deferOf = (c: Context<AppEnv>) => (work: Promise<unknown>) => c.executionCtx.waitUntil(work);

export const listContacts: AppRouteHandler<typeof routes.listContacts> = async (c) => {
  const { page, per_page, updated_at, include } = c.req.valid("query");
  const { body, total } = await contacts.listContacts(
    c.var.deps,
    personId(c.var.principal),
    {
      since: updated_at,
      include,
      ...pageWindow({ page, per_page }),
    },
    deferOf(c),
  );
  setPageHeaders(c, { page, per_page }, total);
  // Already JSON (rendered by the owner's object, or by services/contacts.ts): sent as it is.
  return c.body(body, 200, { "Content-Type": "application/json" }) as unknown as ReturnType<
    typeof c.json<contacts.Contact[], 200>
  >;
};

export const listDeletedContacts: AppRouteHandler<typeof routes.listDeletedContacts> = async (c) => {
  const { page, per_page, since } = c.req.valid("query");
  const { items, total } = await contacts.listDeletedContacts(c.var.deps, personId(c.var.principal), {
    since,
    ...pageWindow({ page, per_page }),
  });
  setPageHeaders(c, { page, per_page }, total);
  return c.json(items, 200);
};

export const syncContacts: AppRouteHandler<typeof routes.syncContacts> = async (c) => {
  return c.json(
    await contacts.saveContacts(c.var.deps, personId(c.var.principal), c.req.valid("json"), deferOf(c)),
    200,
  );
};

export const getContact: AppRouteHandler<typeof routes.getContact> = async (c) => {
  const { id } = c.req.valid("param");
  return c.json(await contacts.getContact(c.var.deps, personId(c.var.principal), id, deferOf(c)), 200);
};

export const putContact: AppRouteHandler<typeof routes.putContact> = async (c) => {
  const { id } = c.req.valid("param");
  return c.json(
    await contacts.updateContact(c.var.deps, personId(c.var.principal), id, c.req.valid("json"), deferOf(c)),
    200,
  );
};

export const deleteContact: AppRouteHandler<typeof routes.deleteContact> = async (c) => {
  const { id } = c.req.valid("param");
  await contacts.deleteContact(c.var.deps, personId(c.var.principal), id);
  return c.json({ success: true as const }, 200);
};

export const clearContacts: AppRouteHandler<typeof routes.clearContacts> = async (c) => {
  await contacts.clearContacts(c.var.deps, personId(c.var.principal));
  return c.body(null, 204);
};

export const clearContactsOf: AppRouteHandler<typeof routes.clearContactsOf> = async (c) => {
  const { id } = c.req.valid("param");
  const owner = personId(c.var.principal);
  if (id !== owner) throw notFound(`person ${id} does not exist`);
  await contacts.clearContacts(c.var.deps, owner);
  return c.body(null, 204);
};

export const listTrustRequests: AppRouteHandler<typeof routes.listTrustRequests> = async (c) => {
  const query = c.req.valid("query");
  const page = await trustRequests.pendingRequests(c.var.deps, personId(c.var.principal), query);
  setNextCursor(c, page.next, query.limit);
  return c.json(page.items, 200);
};

export const createTrustRequest: AppRouteHandler<typeof routes.createTrustRequest> = async (c) => {
  const { contact_reason, ...target } = c.req.valid("json");
  await trustRequests.askForTrust(c.var.deps, personId(c.var.principal), target, contact_reason);
  return c.json({ success: true as const }, 201);
};

export const decideTrust: AppRouteHandler<typeof routes.decideTrust> = async (c) => {
  const { id } = c.req.valid("param");
  const { trusted } = c.req.valid("json");
  await trustRequests.decideTrust(c.var.deps, personId(c.var.principal), id, trusted);
  return c.json({ id, trusted }, 201);
};

export const listCompanyEmployees: AppRouteHandler<typeof routes.listCompanyEmployees> = async (c) => {
  return c.json(await companiesWithEmployees(c.var.deps, personId(c.var.principal)), 200);
};

export const getCompanyEmployees: AppRouteHandler<typeof routes.getCompanyEmployees> = async (c) => {
  const { id } = c.req.valid("param");
  const { entry } = accepted(await companyWithEmployees(c.var.deps, personId(c.var.principal), id));
  return c.json(entry, 200);
};
