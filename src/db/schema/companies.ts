import { sql } from "drizzle-orm";
import { index, integer, primaryKey, sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";
import { cascadeRef, createdAt, flag, id, timestamp, updatedAt } from "./columns";
import { licenses } from "./licenses";
import { people } from "./people";

/**
 * One table for every organisation the API knows: employers (tenants),
 * people-search sites, publishers of consent containers and their vendors.
 * `kind` says which; a site row is what `/sites` lists (docs/decisions.md,
 * "Companies and sites").
 */
export const companyKinds = ["employer", "site", "publisher", "vendor"] as const;
export type CompanyKind = (typeof companyKinds)[number];

export const companies = sqliteTable(
  "companies",
  {
    id: id(),
    kind: text("kind", { enum: companyKinds }).notNull(),
    name: text("name").notNull(),
    slug: text("slug").notNull(),
    status: text("status", { enum: ["enabled", "disabled"] })
      .notNull()
      .default("enabled"),
    url: text("url").notNull().default(""),
    logo: text("logo"),
    /** Publisher primary domain (consent container CORS and lookup result). */
    domain: text("domain"),
    /** Vendors: public trust profile. */
    profileUrl: text("profile_url"),
    /** Sites: whether the scanner covers it. */
    scanner: flag("scanner").notNull().default(false),
    /**
     * Whether the company's scan side (its employees' scans, results, exposures and their history)
     * lives in its own object (docs/architecture.md, "The Company object"): true for every company
     * created since migration 0032; a company older than that is served from D1's tables until
     * the operator's move carries it over.
     */
    scansInObject: flag("scans_in_object").notNull().default(true),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (t) => [uniqueIndex("companies_slug_uq").on(t.slug), index("companies_kind_idx").on(t.kind)],
);

/**
 * The numbers a company calls from: once the platform operator has verified
 * one, its members' secure numbers trust it (docs/decisions.md, "Who is
 * trusted"). Several companies may claim a number; only one verifies it.
 */
export const companyPhoneStatuses = ["pending", "verified", "refused"] as const;
export type CompanyPhoneStatus = (typeof companyPhoneStatuses)[number];

export const companyPhones = sqliteTable(
  "company_phones",
  {
    id: id(),
    companyId: cascadeRef("company_id", () => companies.id),
    countryCode: text("country_code").notNull(),
    phoneNumber: text("phone_number").notNull(),
    e164: text("e164").notNull(),
    /** What the number is for ("Front desk"); null when none was given. */
    label: text("label"),
    /**
     * `pending` until the operator verifies it: only a verified phone counts for trust. `refused`: the
     * operator rejected the claim, or another company's claim on the number was verified first.
     */
    status: text("status", { enum: companyPhoneStatuses }).notNull().default("pending"),
    /** When the company claimed it: a claim still pending 30 days later has expired (docs/decisions.md). */
    createdAt: createdAt().default(sql`0`),
  },
  (t) => [
    // Several companies may claim a number; one company once, and only one verifies it.
    uniqueIndex("company_phones_company_e164_uq").on(t.companyId, t.e164),
    uniqueIndex("company_phones_verified_e164_uq")
      .on(t.e164)
      .where(sql`status = 'verified'`),
    index("company_phones_company_idx").on(t.companyId, t.id),
    // The daily prune of claims expired or refused walks this.
    index("company_phones_unverified_created_idx")
      .on(t.createdAt)
      .where(sql`status <> 'verified'`),
  ],
);

/** Roles are per company; `permissions` holds strings like "read settings". */
export const roles = sqliteTable(
  "roles",
  {
    id: id(),
    companyId: cascadeRef("company_id", () => companies.id),
    name: text("name").notNull(),
    permissions: text("permissions", { mode: "json" }).$type<string[]>().notNull(),
  },
  (t) => [uniqueIndex("roles_company_name_uq").on(t.companyId, t.name)],
);

/**
 * A person's place in a company: roles, the license seat they hold and, for
 * ephemeral employees, when the hourly purge removes them.
 */
export const memberships = sqliteTable(
  "memberships",
  {
    id: id(),
    companyId: cascadeRef("company_id", () => companies.id),
    personId: cascadeRef("person_id", () => people.id),
    licenseId: text("license_id").references(() => licenses.id),
    licenseStartAt: timestamp("license_start_at"),
    licenseEndAt: timestamp("license_end_at"),
    licenseRenews: flag("license_renews").notNull().default(true),
    licenseProrateOnRenewal: flag("license_prorate_on_renewal").notNull().default(false),
    ephemeralUntil: timestamp("ephemeral_until"),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (t) => [
    uniqueIndex("memberships_company_person_uq").on(t.companyId, t.personId),
    index("memberships_person_idx").on(t.personId),
    index("memberships_company_license_idx").on(t.companyId, t.licenseId),
    index("memberships_ephemeral_idx").on(t.ephemeralUntil),
  ],
);

/**
 * The newest change among a company's members (src/db/rosters.ts): the
 * newest time a member's person record or membership changed and whose it
 * was, and the newest among the other members. A member's heartbeat reads its
 * `last_coworker_update` here (the newest change of *another* member) in one
 * row, whatever the size of the company.
 */
export const companyRosters = sqliteTable("company_rosters", {
  companyId: integer("company_id")
    .primaryKey()
    .references(() => companies.id, { onDelete: "cascade" }),
  /** Whose change is the newest (no reference: the time outlives a removed member). */
  firstPersonId: integer("first_person_id").notNull(),
  firstAt: integer("first_at").notNull(),
  /** The newest change of any other member; null when no one else changed. */
  secondAt: integer("second_at"),
});

export const membershipRoles = sqliteTable(
  "membership_roles",
  {
    membershipId: cascadeRef("membership_id", () => memberships.id),
    roleId: cascadeRef("role_id", () => roles.id),
  },
  (t) => [primaryKey({ columns: [t.membershipId, t.roleId] }), index("membership_roles_role_idx").on(t.roleId)],
);

/** How an invitation's sending finished (services/invitations.ts). */
export const invitationOutcomes = ["sent", "refused", "expired", "not-theirs", "left"] as const;

/**
 * Login invitations, one per employee created with `invite: true`: an email to their primary address
 * telling them to sign in to the app with it (services/invitations.ts), sent after the command by
 * the `background` queue. The email carries no token (signing in is by a code to the address), so
 * the row keeps the address and its sending; a finished one goes 30 days after it finished
 * (services/retention.ts).
 */
export const invitations = sqliteTable(
  "invitations",
  {
    id: id(),
    companyId: cascadeRef("company_id", () => companies.id),
    personId: cascadeRef("person_id", () => people.id),
    email: text("email").notNull(),
    /**
     * Empty since drizzle/0044 (the email carries no token; before, the hash of one nothing
     * redeemed). The column stays while a Worker of before 0044 may still be running, which writes
     * it (NOT NULL); a later migration drops it.
     */
    tokenHash: text("token_hash").notNull(),
    expiresAt: timestamp("expires_at").notNull(),
    createdAt: createdAt(),
    /** When its sending finished (null: still due), and how (`invitationOutcomes`). */
    finishedAt: timestamp("finished_at"),
    outcome: text("outcome", { enum: invitationOutcomes }),
  },
  (t) => [
    index("invitations_company_person_idx").on(t.companyId, t.personId),
    // The due ones, oldest first (services/invitations.ts).
    index("invitations_due_idx")
      .on(t.id)
      .where(sql`finished_at is null`),
    // The finished ones, by when they finished: retention finds those past their time without a scan.
    index("invitations_finished_idx")
      .on(t.finishedAt)
      .where(sql`finished_at is not null`),
  ],
);

/**
 * How many employees (memberships) a company has: the employee list's
 * `X-Total-Count` in one read, whatever the company's size. Kept by triggers
 * on `memberships` (drizzle/0023_company_list_counts_triggers.sql).
 */
export const companyEmployeeCounts = sqliteTable("company_employee_counts", {
  companyId: integer("company_id").primaryKey(),
  n: integer("n").notNull(),
});
