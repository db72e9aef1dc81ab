import { createRouter } from "../create-router";
import * as handlers from "./webhooks.handlers";
import * as routes from "./webhooks.routes";

// `/webhooks/history…` goes before `/webhooks/{id}` so the literal path wins.
const router = createRouter()
  .openapi(routes.listWebhooks, handlers.listWebhooks)
  .openapi(routes.listEvents, handlers.listEvents)
  .openapi(routes.listHistory, handlers.listHistory)
  .openapi(routes.getHistoryEntry, handlers.getHistoryEntry)
  .openapi(routes.resendDelivery, handlers.resendDelivery)
  .openapi(routes.getWebhook, handlers.getWebhook)
  .openapi(routes.createWebhook, handlers.createWebhook)
  .openapi(routes.updateWebhook, handlers.updateWebhook)
  .openapi(routes.deleteWebhook, handlers.deleteWebhook)
  .openapi(routes.testWebhook, handlers.testWebhook)
  .openapi(routes.rotateSecret, handlers.rotateSecret);

export default router;
