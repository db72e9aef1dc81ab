import { createRouter } from "../create-router";
import * as handlers from "./scans.handlers";
import * as routes from "./scans.routes";

const router = createRouter().openapi(routes.postScanEvents, handlers.postScanEvents);

export default router;
