import { createRouter } from "../create-router";
import * as handlers from "./me.handlers";
import * as routes from "./me.routes";

/** The caller's own account (`/me…`, person tokens). */
const router = createRouter()
  .openapi(routes.getMe, handlers.getMe)
  .openapi(routes.listMyPhones, handlers.listMyPhones)
  .openapi(routes.addMyPhone, handlers.addMyPhone)
  .openapi(routes.verifyMyPhone, handlers.verifyMyPhone)
  .openapi(routes.confirmMyPhone, handlers.confirmMyPhone)
  .openapi(routes.listMyDevices, handlers.listMyDevices)
  .openapi(routes.deleteMyDevice, handlers.deleteMyDevice)
  .openapi(routes.putMyDevicePush, handlers.putMyDevicePush)
  .openapi(routes.deleteMyDevicePush, handlers.deleteMyDevicePush)
  .openapi(routes.getSettings, handlers.getSettings)
  .openapi(routes.putSettings, handlers.putSettings);

export default router;
