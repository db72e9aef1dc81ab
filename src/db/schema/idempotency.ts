import { index, integer, primaryKey, sqliteTable, text } from "drizzle-orm/sqlite-core";
import { cascadeRef } from "./columns";
import { companies } from "./companies";

/**
 * The Idempotency-Key of a company's creating POSTs (employees, bulk,
 * webhooks, licenses, phones; docs/decisions.md, "Idempotency keys"): one
 * row per company, caller and key, with the request's fingerprint, when it
 * was claimed (ms) and the first answer (null while that request runs).
 * Pruned 24 h after the claim by the daily retention.
 */
export const companyIdempotencyKeys = sqliteTable(
  "company_idempotency_keys",
  {
    companyId: cascadeRef("company_id", () => companies.id),
    personId: integer("person_id").notNull(),
    key: text("key").notNull(),
    fingerprint: text("fingerprint").notNull(),
    claimedAt: integer("claimed_at").notNull(),
    status: integer("status"),
    body: text("body"),
    contentType: text("content_type"),
    location: text("location"),
  },
  (t) => [
    primaryKey({ columns: [t.companyId, t.personId, t.key] }),
    index("company_idempotency_keys_claimed_at_idx").on(t.claimedAt),
  ],
);
