import { and, count, eq, isNotNull, sql, type SQL } from "drizzle-orm";
import type { Db } from "../db/client";
import { guardStatement } from "../db/guard";
import { companySeats, memberships } from "../db/schema";
import { badRequest } from "../lib/errors";
import type { Deps } from "./deps";

/**
 * Seats of a license in a company (docs/decisions.md): `num_active` bought,
 * `num_assigned` held by members, `num_available = num_active - num_assigned`.
 */
export type Seats = { num_active: number; num_assigned: number; num_available: number };

/** Seats per license id for one company; licenses the company never bought are absent (all zero). */
export async function seatsByLicense(db: Db, companyId: number): Promise<Map<string, Seats>> {
  const [bought, assigned] = await db.batch([
    db
      .select({ licenseId: companySeats.licenseId, quantity: companySeats.quantity })
      .from(companySeats)
      .where(eq(companySeats.companyId, companyId)),
    db
      .select({ licenseId: memberships.licenseId, n: count() })
      .from(memberships)
      .where(and(eq(memberships.companyId, companyId), isNotNull(memberships.licenseId)))
      .groupBy(memberships.licenseId),
  ]);
  const seats = new Map<string, Seats>();
  const entry = (licenseId: string) => {
    let found = seats.get(licenseId);
    if (!found) seats.set(licenseId, (found = { num_active: 0, num_assigned: 0, num_available: 0 }));
    return found;
  };
  for (const row of bought) entry(row.licenseId).num_active = row.quantity;
  for (const row of assigned) if (row.licenseId) entry(row.licenseId).num_assigned = row.n;
  for (const value of seats.values()) value.num_available = value.num_active - value.num_assigned;
  return seats;
}

export const NO_SEATS: Seats = { num_active: 0, num_assigned: 0, num_available: 0 };

/** Throws the 400 of docs/decisions.md when the company has no free seat of the license. */
export async function assertSeatAvailable(deps: Deps, companyId: number, licenseId: string) {
  await assertSeatsAvailable(deps, companyId, new Map([[licenseId, 1]]));
}

/**
 * The same for a batch of employees (docs/onboarding.md): `needed` seats per
 * license id, all free, or a 400 naming the first license short of seats. One read.
 */
export async function assertSeatsAvailable({ db }: Deps, companyId: number, needed: Map<string, number>) {
  if (needed.size === 0) return;
  const byLicense = await seatsByLicense(db, companyId);
  for (const [licenseId, count] of needed) {
    const seats = byLicense.get(licenseId) ?? NO_SEATS;
    if (seats.num_available >= count) continue;
    if (count === 1) throw noSeat(licenseId, seats);
    throw badRequest(
      `not enough \`${licenseId}\` seats: ${count} employees need one and ${Math.max(0, seats.num_available)} of ${seats.num_active} are free; buy more with POST /companies/{company_id}/licenses or name another \`license\``,
    );
  }
}

const noSeat = (licenseId: string, seats: Seats) =>
  badRequest(
    `no \`${licenseId}\` seat is available (${seats.num_assigned} of ${seats.num_active} assigned); buy more with POST /companies/{company_id}/licenses or name another \`license\``,
  );

/** Gives the membership of (company, person) the license, starting now. */
export function assignSeatStatement(db: Db, companyId: number, personId: number | SQL, licenseId: string, now: Date) {
  return db
    .update(memberships)
    .set({ licenseId, licenseStartAt: now, licenseEndAt: null, updatedAt: now })
    .where(and(eq(memberships.companyId, companyId), eq(memberships.personId, personId)));
}

/** Frees the seat the membership holds (removing a membership frees it too). */
export function freeSeatStatement(db: Db, companyId: number, personId: number, now: Date) {
  return db
    .update(memberships)
    .set({ licenseId: null, licenseStartAt: null, licenseEndAt: null, updatedAt: now })
    .where(and(eq(memberships.companyId, companyId), eq(memberships.personId, personId)));
}

/**
 * `assertSeatAvailable` answers the common case with a clear message, but two
 * requests can both see the last seat free: the batch that assigns `needed`
 * seats of `licenseId` ends with this guard (src/db/guard.ts), which rolls it
 * back when the company now holds more seats of the license than it bought.
 * Its check, asked after a rollback: fewer than `needed` seats free now is the
 * no-seat 400 naming this license.
 */
export function seatGuardStatement(db: Db, companyId: number, licenseId: string, needed = 1) {
  const bought = sql`coalesce((select ${companySeats.quantity} from ${companySeats} where ${companySeats.companyId} = ${companyId} and ${companySeats.licenseId} = ${licenseId}), 0)`;
  const held = sql`(select count(*) from ${memberships} where ${memberships.companyId} = ${companyId} and ${memberships.licenseId} = ${licenseId})`;
  return guardStatement(db, "seats", sql`${bought} < ${held}`, async () => {
    const seats = (await seatsByLicense(db, companyId)).get(licenseId) ?? NO_SEATS;
    if (seats.num_available < needed) throw noSeat(licenseId, seats);
  });
}
