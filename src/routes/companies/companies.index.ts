import { createRouter } from "../create-router";
import * as handlers from "./companies.handlers";
import * as routes from "./companies.routes";
import * as phoneHandlers from "./phones.handlers";
import * as phoneRoutes from "./phones.routes";

const router = createRouter()
  .openapi(routes.getCompany, handlers.getCompany)
  .openapi(routes.listRoles, handlers.listRoles)
  .openapi(routes.listSites, handlers.listSites)
  .openapi(routes.getSite, handlers.getSite)
  .openapi(phoneRoutes.listCompanyPhones, phoneHandlers.listCompanyPhones)
  .openapi(phoneRoutes.addCompanyPhone, phoneHandlers.addCompanyPhone)
  .openapi(phoneRoutes.removeCompanyPhone, phoneHandlers.removeCompanyPhone);

export default router;

/**
 * The seed's alternative paths share the canonical handlers. The app mounts
 * this router after every other area, so `/{company_id}/…` never shadows a
 * real route.
 */
export const seedFormRouter = createRouter();
for (const route of routes.siteAliases) seedFormRouter.openapi(route, handlers.getSite);
seedFormRouter.openapi(routes.listSitesAlias, handlers.listSites);
