import { createRouter } from "../../lib/create-router";
import * as handlers from "./me.handlers";
import * as routes from "./me.routes";

/** The caller's own account (`/me…`, person tokens). */
const router = createRouter()
  // settings
  .openapi(routes.getSettings, handlers.getSettings)
  .openapi(routes.putSettings, handlers.putSettings);

export default router;
