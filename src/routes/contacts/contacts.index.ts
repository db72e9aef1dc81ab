import { createRouter } from "../create-router";
import * as handlers from "./contacts.handlers";
import * as routes from "./contacts.routes";
import * as trustHandlers from "./company-trust.handlers";
import * as trustRoutes from "./company-trust.routes";

/**
 * Fixed paths are registered before `/contacts/{id}`, so `/contacts/requests`
 * and the like never reach the id routes.
 */
const router = createRouter()
  .openapi(routes.listContacts, handlers.listContacts)
  .openapi(routes.listDeletedContacts, handlers.listDeletedContacts)
  .openapi(routes.syncContacts, handlers.syncContacts)
  .openapi(routes.postContacts, handlers.syncContacts)
  .openapi(routes.listTrustRequests, handlers.listTrustRequests)
  .openapi(routes.createTrustRequest, handlers.createTrustRequest)
  .openapi(routes.decideTrust, handlers.decideTrust)
  .openapi(routes.clearContacts, handlers.clearContacts)
  .openapi(routes.clearContactsOf, handlers.clearContactsOf)
  .openapi(routes.listCompanyEmployees, handlers.listCompanyEmployees)
  .openapi(routes.getCompanyEmployees, handlers.getCompanyEmployees)
  .openapi(trustRoutes.listCompanyTrust, trustHandlers.listCompanyTrust)
  .openapi(trustRoutes.setCompanyTrust, trustHandlers.setCompanyTrust)
  .openapi(routes.getContact, handlers.getContact)
  .openapi(routes.putContact, handlers.putContact)
  .openapi(routes.deleteContact, handlers.deleteContact);

export default router;
