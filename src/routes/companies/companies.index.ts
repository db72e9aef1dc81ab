import { createRouter } from "../../lib/create-router";
import * as handlers from "./companies.handlers";
import * as routes from "./companies.routes";

const router = createRouter()
  .openapi(routes.getCompany, handlers.getCompany)
  .openapi(routes.listRoles, handlers.listRoles)
  .openapi(routes.listSites, handlers.listSites)
  .openapi(routes.getSite, handlers.getSite);

export default router;

/**
 * The seed's alternative paths share the canonical handlers. The app mounts
 * this router after every other area, so `/{company_id}/…` never shadows a
 * real route.
 */
export const seedFormRouter = createRouter();
for (const route of routes.siteAliases) seedFormRouter.openapi(route, handlers.getSite);
seedFormRouter.openapi(routes.listSitesAlias, handlers.listSites);
