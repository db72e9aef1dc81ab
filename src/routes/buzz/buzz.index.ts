import { createRouter } from "../../lib/create-router";
import * as handlers from "./buzz.handlers";
import * as routes from "./buzz.routes";
import { TrustLookupBody } from "./buzz.schemas";

const router = createRouter()
  .openapi(routes.putEncryption, handlers.putEncryption)
  .openapi(routes.trustLookupGet, handlers.trustLookupGet)
  .openapi(routes.trustLookupPost, handlers.trustLookupPost)
  .openapi(routes.callLookup, handlers.callLookup)
  .openapi(routes.heartbeat, handlers.heartbeat)
  .openapi(routes.listBlocked, handlers.listBlocked)
  .openapi(routes.createActivity, handlers.createActivity)
  .openapi(routes.listActivity, handlers.listActivity)
  .openapi(routes.clearHistory, handlers.clearHistory);

// The trust-lookup POST body is documented by reference (see buzz.routes.ts).
router.openAPIRegistry.register("TrustLookupRequest", TrustLookupBody);

export default router;
