import { count, eq } from "drizzle-orm";
import type { Db } from "../../db/client";
import { errorText } from "../../db/errors";
import { failedGuard } from "../../db/guard";
import { memberships } from "../../db/schema";
import { MAX_EMPLOYEES_PER_COMPANY } from "../../domain/employees";
import { badRequest, conflict } from "../../lib/errors";
import type { CompanyAccess } from "../../types";
import type { WriteBatch } from "../outbox";
import { noSeatAfterRace, seatsByLicense } from "../seats";
import type { Standing } from "./authorization";

/**
 * The answers of the employee commands' refusals, and the translation of a
 * failed batch (a guard a concurrent request tripped, a unique email) into
 * the answer the checks before it would have given.
 */

type SettingsGuard = { access: CompanyAccess; personId: number; target: Standing };

/**
 * Runs a write batch, turning the guard and constraint failures a concurrent
 * request can cause into the answers the checks before it would have given.
 */
export async function runBatch(
  batch: WriteBatch,
  companyId: number,
  licenseIds: string[],
  { settings, adding = 0 }: { settings?: SettingsGuard; adding?: number } = {},
) {
  try {
    return await batch.commit();
  } catch (err) {
    if (adding > 0 && failedGuard(err) === "employeeQuota") {
      const [members] = await batch.deps.db
        .select({ n: count() })
        .from(memberships)
        .where(eq(memberships.companyId, companyId));
      throw tooManyEmployees(companyId, members?.n ?? 0, adding);
    }
    if (licenseIds.length > 0 && failedGuard(err) === "seats") {
      await noSeatAfterRace(batch.deps.db, companyId, await shortLicense(batch.deps.db, companyId, licenseIds));
    }
    if (settings && failedGuard(err) === "settingsWriter") {
      const { access, personId, target } = settings;
      throw lastSettingsWriter(access, personId, target.membershipId === access.membershipId, "demote");
    }
    if (errorText(err).includes("UNIQUE constraint failed: person_emails.email")) {
      throw badRequest("one of the emails was just taken by another person; nothing was changed");
    }
    throw err;
  }
}

export const tooManyEmployees = (companyId: number, have: number, adding: number) =>
  badRequest(
    `a company may have at most ${MAX_EMPLOYEES_PER_COMPANY.toLocaleString("en-US")} employees; company ${companyId} has ${have} and this would add ${adding}`,
  );

/** Of the licenses a rolled-back batch assigned, the first one now short of seats (the guard's reason). */
async function shortLicense(db: Db, companyId: number, licenseIds: string[]): Promise<string> {
  const seats = await seatsByLicense(db, companyId);
  return licenseIds.find((id) => (seats.get(id)?.num_available ?? 0) <= 0) ?? licenseIds[0]!;
}

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
