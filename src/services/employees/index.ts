/**
 * Employees of a company (`/companies/{company_id}/employees…`). One file per concern:
 *
 * - `commands.ts`: create (one or in bulk), update, remove;
 * - `list.ts`: a page of employees, with the email-prefix search, and one employee;
 * - `authorization.ts`: a member's standing, who may change whom and give which roles, the last `write settings` holder;
 * - `person-wide.ts`: what an employer may not change of a person another company shares;
 * - `emails.ts`: email uniqueness, replacement and the primary flag;
 * - `statements.ts`: the SQL that inserts employees in bulk and replaces collections;
 * - `errors.ts`: refusals (a failed batch is explained by its guards' checks, db/guard.ts).
 *
 * The input shapes and limits are the domain's (src/domain/employees.ts).
 */
export { createEmployee, createEmployees, removeEmployee, updateEmployee } from "./commands";
export { getEmployee, listEmployees } from "./list";
export { MAX_BULK_EMPLOYEES, MAX_EMPLOYEES_PER_COMPANY } from "../../domain/employees";
