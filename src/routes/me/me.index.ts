import { createRouter } from "../../lib/create-router";
import * as handlers from "./me.handlers";
import * as routes from "./me.routes";

const router = createRouter()
  // GET /me
  .openapi(routes.getMe, handlers.getMe);

export default router;
