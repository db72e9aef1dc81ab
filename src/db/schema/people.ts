import { sql } from "drizzle-orm";
import { index, integer, sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";
import { companies } from "./companies";
import { cascadeRef, createdAt, flag, id, timestamp, updatedAt } from "./columns";

/**
 * People are global accounts: an employee of several companies, a secure-app
 * user and a contact's linked platform user are all the same row. Company
 * membership lives in `memberships`.
 */
export const people = sqliteTable("people", {
  id: id(),
  firstName: text("first_name").notNull(),
  middleName: text("middle_name"),
  lastName: text("last_name").notNull(),
  dob: text("dob"),
  avatarUrl: text("avatar_url"),
  riskScore: integer("risk_score").notNull().default(0),
  /** Encryption data of the secure-calling app (docs/decisions.md, "Encryption identifiers"). */
  encryptionHash: text("encryption_hash"),
  e2eId: text("e2e_id"),
  lastScanAt: timestamp("last_scan_at"),
  lastLoginAt: timestamp("last_login_at"),
  /**
   * The company that entered the person (created the account), for good: an email another company
   * manages never signs them in (src/services/sign-in.ts), even after the entering company removed
   * them. Null for an account older than this column: then a managed email signs them in only while
   * they belong to no other company. No reference: company ids are never reused.
   */
  enteredBy: integer("entered_by_company_id"),
  /**
   * Grows with every change of the facts the person's object is told (secure number, memberships),
   * raised by a trigger on their `prs:` index work (drizzle/0025): an object ignores facts older
   * than those it holds (docs/architecture.md, "Fact versions").
   */
  factsVersion: integer("facts_version").notNull().default(0),
  createdAt: createdAt(),
  updatedAt: updatedAt(),
});

export const personAkas = sqliteTable(
  "person_akas",
  {
    id: id(),
    personId: cascadeRef("person_id", () => people.id),
    firstName: text("first_name").notNull(),
    middleName: text("middle_name"),
    lastName: text("last_name"),
  },
  (t) => [index("person_akas_person_idx").on(t.personId)],
);

/**
 * Emails are unique across all people (docs/decisions.md). `employerCompanyId`
 * marks an address a company added for its employee, so removing the employee
 * can tell employer emails from the person's own (docs/decisions.md, "Data model").
 * Stored lowercased; the unique index also serves prefix search as a range scan.
 */
export const personEmails = sqliteTable(
  "person_emails",
  {
    id: id(),
    personId: cascadeRef("person_id", () => people.id),
    email: text("email").notNull(),
    primary: flag("primary").notNull().default(false),
    employerCompanyId: integer("employer_company_id").references(() => companies.id, {
      onDelete: "set null",
    }),
  },
  (t) => [
    uniqueIndex("person_emails_email_uq").on(t.email),
    index("person_emails_person_idx").on(t.personId),
    index("person_emails_employer_idx").on(t.employerCompanyId),
  ],
);

export const personPhones = sqliteTable(
  "person_phones",
  {
    id: id(),
    personId: cascadeRef("person_id", () => people.id),
    /** Calling code as digits, e.g. "1". */
    countryCode: text("country_code").notNull(),
    /** National significant number, digits only. */
    phoneNumber: text("phone_number").notNull(),
    e164: text("e164").notNull(),
    primary: flag("primary").notNull().default(false),
    /**
     * Set by the person themselves (`POST /me/phones/{id}/confirm`, or a phone they added through `/me`):
     * only a confirmed phone carries the trust others gave them (docs/decisions.md, "Who is trusted").
     * A number is confirmed by at most one person.
     */
    confirmed: flag("confirmed").notNull().default(false),
  },
  (t) => [
    index("person_phones_e164_idx").on(t.e164),
    index("person_phones_person_idx").on(t.personId),
    uniqueIndex("person_phones_confirmed_uq")
      .on(t.e164)
      .where(sql`confirmed = 1`),
  ],
);

export const personAddresses = sqliteTable(
  "person_addresses",
  {
    id: id(),
    personId: cascadeRef("person_id", () => people.id),
    primary: flag("primary").notNull().default(false),
    line1: text("line_1").notNull(),
    line2: text("line_2"),
    city: text("city").notNull(),
    region: text("region").notNull(),
    postalCode: text("postal_code").notNull(),
    /** ISO 3166-1 alpha-2, uppercase. */
    country: text("country").notNull(),
  },
  (t) => [index("person_addresses_person_idx").on(t.personId)],
);
