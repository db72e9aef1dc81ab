import { createRouter } from "../create-router";
import * as handlers from "./me.handlers";
import * as routes from "./me.routes";

/** The caller's own account (`/me…`, person tokens). */
const router = createRouter()
  .openapi(routes.getMe, handlers.getMe)
  .openapi(routes.listMyPhones, handlers.listMyPhones)
  .openapi(routes.confirmMyPhone, handlers.confirmMyPhone)
  .openapi(routes.getSettings, handlers.getSettings)
  .openapi(routes.putSettings, handlers.putSettings);

export default router;
