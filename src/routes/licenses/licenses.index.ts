import { createRouter } from "../create-router";
import * as handlers from "./licenses.handlers";
import * as routes from "./licenses.routes";

export default createRouter()
  .openapi(routes.listCompanyLicenses, handlers.listLicenses)
  .openapi(routes.getCompanyLicense, handlers.getLicense)
  .openapi(routes.purchaseCompanyLicenses, handlers.purchaseLicenses)
  .openapi(routes.listLicenses, handlers.listLicenses)
  .openapi(routes.getLicense, handlers.getLicense)
  .openapi(routes.purchaseLicenses, handlers.purchaseLicenses);
