import { createRouter } from "../create-router";
import * as handlers from "./vcc.handlers";
import * as routes from "./vcc.routes";

const router = createRouter()
  .openapi(routes.loadContainer, handlers.loadContainer)
  .openapi(routes.setVendorTrust, handlers.setVendorTrustHandler)
  .openapi(routes.vendorTrustPreflight, handlers.vendorTrustPreflight)
  .openapi(routes.createSession, handlers.createSession)
  .openapi(routes.deleteSession, handlers.deleteSession)
  .openapi(routes.frame, handlers.frame);

router.openAPIRegistry.registerComponent("securitySchemes", "sessionCookie", {
  type: "apiKey",
  in: "cookie",
  name: "session",
  description:
    "The consent container's session (`POST /apps/vcc/session`): a container-scoped token, valid only on `/apps/vcc/*`.",
});

export default router;
