import { sql } from "drizzle-orm";
import { index, integer, primaryKey, sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";
import { companies } from "./companies";
import { cascadeRef, createdAt, flag, id, updatedAt } from "./columns";
import { people } from "./people";

/** The license catalog; ids are strings such as "scan" (docs/decisions.md). */
export const licenses = sqliteTable(
  "licenses",
  {
    id: text("id").primaryKey(),
    name: text("name").notNull(),
    /** Minor units (cents). */
    price: integer("price").notNull(),
    currency: text("currency").notNull().default("USD"),
    fullScan: flag("full_scan").notNull().default(false),
    fullDelete: flag("full_delete").notNull().default(false),
  },
  // A license is also named by its name, case-insensitively (matchLicense): two PUTs of one name at
  // once cannot both land (the second batch fails here and is answered 409).
  (t) => [uniqueIndex("licenses_name_uq").on(sql`lower(${t.name})`)],
);

/** Sites a license covers. */
export const licenseSites = sqliteTable(
  "license_sites",
  {
    licenseId: text("license_id")
      .notNull()
      .references(() => licenses.id, { onDelete: "cascade" }),
    siteId: cascadeRef("site_id", () => companies.id),
  },
  (t) => [primaryKey({ columns: [t.licenseId, t.siteId] })],
);

/** Seats a company owns per license: `num_active` of the API's License (OpenAPI component `License`). */
export const companySeats = sqliteTable(
  "company_seats",
  {
    companyId: cascadeRef("company_id", () => companies.id),
    licenseId: text("license_id")
      .notNull()
      .references(() => licenses.id),
    quantity: integer("quantity").notNull().default(0),
    updatedAt: updatedAt(),
  },
  (t) => [primaryKey({ columns: [t.companyId, t.licenseId] })],
);

/** Every purchase, for the record; seats are the running total in `company_seats`. */
export const licensePurchases = sqliteTable(
  "license_purchases",
  {
    id: id(),
    companyId: cascadeRef("company_id", () => companies.id),
    licenseId: text("license_id")
      .notNull()
      .references(() => licenses.id),
    quantity: integer("quantity").notNull(),
    purchasedBy: integer("purchased_by").references(() => people.id, { onDelete: "set null" }),
    createdAt: createdAt(),
  },
  (t) => [index("license_purchases_company_idx").on(t.companyId, t.createdAt)],
);
