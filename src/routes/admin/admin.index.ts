import { createRouter } from "../create-router";
import * as handlers from "./admin.handlers";
import * as routes from "./admin.routes";
import * as licenseHandlers from "./licenses.handlers";
import * as licenseRoutes from "./licenses.routes";
import * as moveHandlers from "./moves.handlers";
import * as moveRoutes from "./moves.routes";
import * as peopleHandlers from "./people.handlers";
import * as peopleRoutes from "./people.routes";
import * as phoneHandlers from "./phones.handlers";
import * as phoneRoutes from "./phones.routes";
import * as providerHandlers from "./providers.handlers";
import * as providerRoutes from "./providers.routes";
import * as statusHandlers from "./status.handlers";
import * as statusRoutes from "./status.routes";
import * as indexHandlers from "./trust-index.handlers";
import * as indexRoutes from "./trust-index.routes";

/** The platform operator's endpoints (scope `platform:admin`), under /internal. */
const router = createRouter()
  .openapi(routes.createCompany, handlers.createCompany)
  .openapi(routes.updateCompany, handlers.updateCompany)
  .openapi(routes.addMember, handlers.addMember)
  .openapi(routes.configureContainer, handlers.configureContainer)
  .openapi(licenseRoutes.putLicense, licenseHandlers.putLicense)
  .openapi(licenseRoutes.retireLicense, licenseHandlers.retireLicense)
  .openapi(phoneRoutes.listCompanyPhones, phoneHandlers.listCompanyPhones)
  .openapi(phoneRoutes.verifyCompanyPhone, phoneHandlers.verifyCompanyPhone)
  .openapi(phoneRoutes.rejectCompanyPhone, phoneHandlers.rejectCompanyPhone)
  .openapi(phoneRoutes.removeCompanyPhone, phoneHandlers.removeCompanyPhone)
  .openapi(peopleRoutes.releasePhone, peopleHandlers.releasePhone)
  .openapi(peopleRoutes.revokeToken, peopleHandlers.revokeToken)
  .openapi(peopleRoutes.readOutbox, peopleHandlers.readOutbox)
  .openapi(statusRoutes.status, statusHandlers.status)
  .openapi(moveRoutes.startPersonMoves, moveHandlers.startPersonMoves)
  .openapi(moveRoutes.personMoveStatus, moveHandlers.personMoveStatus)
  .openapi(moveRoutes.startCompanyMoves, moveHandlers.startCompanyMoves)
  .openapi(moveRoutes.companyMoveStatus, moveHandlers.companyMoveStatus)
  .openapi(indexRoutes.startRebuild, indexHandlers.startRebuild)
  .openapi(indexRoutes.rebuildStatus, indexHandlers.rebuildStatus)
  .openapi(providerRoutes.putProviderSigning, providerHandlers.putProviderSigning)
  .openapi(providerRoutes.deleteProviderSigning, providerHandlers.deleteProviderSigning)
  .openapi(providerRoutes.rotateProviderKeys, providerHandlers.rotateProviderKeys);

export default router;
