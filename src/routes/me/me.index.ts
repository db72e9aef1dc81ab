import { createRouter } from "../../lib/create-router";
import * as handlers from "./me.handlers";
import * as routes from "./me.routes";

const router = createRouter()
  .openapi(routes.getMe, handlers.getMe)
  .openapi(routes.listMyPhones, handlers.listMyPhones)
  .openapi(routes.confirmMyPhone, handlers.confirmMyPhone);

export default router;
