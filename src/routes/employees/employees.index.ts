import { createRouter } from "../create-router";
import * as handlers from "./employees.handlers";
import * as routes from "./employees.routes";

// Exposure routes first: `/employees/exposures` must not reach `/employees/{id}`.
export default createRouter()
  .openapi(routes.listExposures, handlers.listExposures)
  .openapi(routes.exposureHistory, handlers.exposureHistory)
  .openapi(routes.listEmployees, handlers.listEmployees)
  .openapi(routes.createEmployee, handlers.createEmployee)
  .openapi(routes.createEmployeesBulk, handlers.createEmployeesBulk)
  .openapi(routes.getEmployee, handlers.getEmployee)
  .openapi(routes.updateEmployee, handlers.updateEmployee)
  .openapi(routes.removeEmployee, handlers.removeEmployee);
