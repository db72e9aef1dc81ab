import * as admin from "../../services/admin";
import type { AppRouteHandler } from "../../types";
import type * as routes from "./admin.routes";

export const createCompany: AppRouteHandler<typeof routes.createCompany> = async (c) =>
  c.json(await admin.createCompany(c.var.deps, c.req.valid("json")), 201);

export const updateCompany: AppRouteHandler<typeof routes.updateCompany> = async (c) =>
  c.json(await admin.updateCompany(c.var.deps, c.req.valid("param").id, c.req.valid("json")), 200);

export const addMember: AppRouteHandler<typeof routes.addMember> = async (c) => {
  const { first_name, last_name, email, roles } = c.req.valid("json");
  const member = await admin.addMember(c.var.deps, c.req.valid("param").id, {
    firstName: first_name,
    lastName: last_name,
    email,
    roles,
  });
  return c.json(member, 201);
};

export const configureContainer: AppRouteHandler<typeof routes.configureContainer> = async (c) =>
  c.json(await admin.configureContainer(c.var.deps, c.req.valid("param").publisher_slug, c.req.valid("json")), 200);
