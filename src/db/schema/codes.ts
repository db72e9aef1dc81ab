import { index, integer, sqliteTable, text } from "drizzle-orm/sqlite-core";
import { createdAt, id, timestamp } from "./columns";
import { people, personPhones } from "./people";

/**
 * One-time codes (docs/security.md, "Codes"): one row per code asked for, sent or not. A row whose
 * address reaches nobody has no `codeHash` and exists only to count the request against its limits (the
 * answer is the same either way). Only an HMAC of the code is kept; rows go a day after their creation.
 */
export const oneTimeCodes = sqliteTable(
  "one_time_codes",
  {
    id: id(),
    /** `sms` or `email`. */
    channel: text("channel", { enum: ["sms", "email"] }).notNull(),
    /** E.164 or a lowercased email. */
    address: text("address").notNull(),
    /** `sign_in` (POST /auth/codes) or `phone` (POST /me/phones/{id}/verification). */
    purpose: text("purpose", { enum: ["sign_in", "phone"] }).notNull(),
    /** The person the code signs in or proves a phone for; null: the address reaches nobody. */
    personId: integer("person_id").references(() => people.id, { onDelete: "cascade" }),
    /** The phone a `phone` code proves. */
    phoneId: integer("phone_id").references(() => personPhones.id, { onDelete: "cascade" }),
    /** The client IP that asked (the per-IP limit). */
    ip: text("ip").notNull(),
    /** An SMS's calling code (the per-country daily cap); null for email. */
    country: text("country"),
    /** HMAC-SHA-256 (CODE_KEY) of `<id>:<address>:<code>`, base64url; null when nothing was sent. */
    codeHash: text("code_hash"),
    tries: integer("tries").notNull().default(0),
    expiresAt: timestamp("expires_at").notNull(),
    spentAt: timestamp("spent_at"),
    createdAt: createdAt(),
  },
  (t) => [
    index("one_time_codes_address_idx").on(t.address, t.createdAt),
    index("one_time_codes_ip_idx").on(t.ip, t.createdAt),
    index("one_time_codes_person_idx").on(t.personId, t.createdAt),
    index("one_time_codes_country_idx").on(t.country, t.createdAt),
    index("one_time_codes_created_idx").on(t.createdAt),
  ],
);

/**
 * The development outbox (docs/app.md, "Signing in"): where SMS and email go when no provider is
 * configured and ENVIRONMENT is `development` (`npm run dev`, the tests). Never written in production.
 */
export const devOutbox = sqliteTable(
  "dev_outbox",
  {
    id: id(),
    to: text("to").notNull(),
    channel: text("channel", { enum: ["sms", "email"] }).notNull(),
    body: text("body").notNull(),
    createdAt: createdAt(),
  },
  (t) => [index("dev_outbox_to_idx").on(t.to, t.id)],
);
