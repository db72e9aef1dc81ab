import { createRouter } from "../../lib/create-router";
import * as handlers from "./buzz.handlers";
import * as routes from "./buzz.routes";

export default createRouter().openapi(routes.putEncryption, handlers.putEncryption);
