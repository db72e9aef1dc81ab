import { createRouter } from "../../lib/create-router";
import * as handlers from "./vcc.handlers";
import * as routes from "./vcc.routes";

export default createRouter().openapi(routes.loadContainer, handlers.loadContainer);
