import { MAX_EMPLOYEES_PER_COMPANY } from "../../domain/employees";
import { badRequest, conflict } from "../../lib/errors";
import type { CompanyAccess } from "../companies";

/**
 * The answers of the employee commands' refusals (a failed batch is turned
 * into them by the guards' checks, db/guard.ts).
 */

export const tooManyEmployees = (companyId: number, have: number, adding: number) =>
  badRequest(
    `a company may have at most ${MAX_EMPLOYEES_PER_COMPANY.toLocaleString("en-US")} employees; company ${companyId} has ${have} and this would add ${adding}`,
  );

export function lastSettingsWriter(
  access: CompanyAccess,
  personId: number,
  self: boolean,
  action: "remove" | "demote",
) {
  const who = self ? "you are" : `employee ${personId} is`;
  const what = action === "remove" ? (self ? "removing yourself" : "removing them") : "taking it away";
  return conflict(
    `${who} the last member of company ${access.companyId} with \`write settings\`; give another member a role with it (such as Admin) before ${what}`,
  );
}

/** `named`: the message names the field (POST and PUT); the bulk route names `[i].license` itself. */
export const noLicense = (ref: string, named: boolean) =>
  badRequest(`${named ? "`license`: " : ""}there is no license ${JSON.stringify(ref)}; see GET /licenses`);
