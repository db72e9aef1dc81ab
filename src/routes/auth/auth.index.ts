import { createRouter } from "../create-router";
import * as handlers from "./auth.handlers";
import * as routes from "./auth.routes";

/** Signing in with a one-time code (`/auth…`, no token; docs/app.md "Signing in"). */
const router = createRouter().openapi(routes.requestCode, handlers.requestCode).openapi(routes.signIn, handlers.signIn);

export default router;
