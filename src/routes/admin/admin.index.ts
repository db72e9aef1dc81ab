import { createRouter } from "../../lib/create-router";
import * as handlers from "./admin.handlers";
import * as routes from "./admin.routes";

/** The platform operator's endpoints (scope `platform:admin`), under /internal. */
const router = createRouter()
  .openapi(routes.createCompany, handlers.createCompany)
  .openapi(routes.updateCompany, handlers.updateCompany)
  .openapi(routes.addMember, handlers.addMember)
  .openapi(routes.configureContainer, handlers.configureContainer);

export default router;
