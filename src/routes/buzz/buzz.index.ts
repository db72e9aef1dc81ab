import { createRouter } from "../create-router";
import * as handlers from "./buzz.handlers";
import * as routes from "./buzz.routes";
import { TrustLookupBody } from "./lookup.schemas";

const router = createRouter()
  .openapi(routes.putEncryption, handlers.putEncryption)
  .openapi(routes.trustLookupGet, handlers.trustLookupGet)
  .openapi(routes.trustLookupPost, handlers.trustLookupPost)
  .openapi(routes.callLookup, handlers.callLookup)
  .openapi(routes.heartbeat, handlers.heartbeat)
  .openapi(routes.listBlocked, handlers.listBlocked)
  .openapi(routes.createActivity, handlers.createActivity)
  .openapi(routes.listActivity, handlers.listActivity)
  .openapi(routes.clearHistory, handlers.clearHistory)
  .openapi(routes.openStream, handlers.openStream)
  .openapi(routes.createStreamTicket, handlers.createStreamTicket);

// The trust-lookup POST body is documented by reference (see buzz.routes.ts).
router.openAPIRegistry.register("TrustLookupRequest", TrustLookupBody);
// Accepted on every route like the bearer token; declared where providers need it (trust-lookup).
router.openAPIRegistry.registerComponent("securitySchemes", "basicAuth", {
  type: "http",
  scheme: "basic",
  description:
    "HTTP Basic with the token as the password (the user name is ignored), for telephony webhooks that can " +
    "send only Basic credentials: `Authorization: Basic base64(any:<token>)`.",
});

export default router;
