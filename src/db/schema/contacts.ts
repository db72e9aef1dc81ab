import { sql } from "drizzle-orm";
import { index, integer, primaryKey, sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";
import { companies } from "./companies";
import { cascadeRef, createdAt, flag, id, timestamp, updatedAt } from "./columns";
import { people } from "./people";

/** A person's address book entry. */
export const contacts = sqliteTable(
  "contacts",
  {
    id: id(),
    ownerId: cascadeRef("owner_id", () => people.id),
    displayName: text("display_name").notNull().default(""),
    birthday: text("birthday"),
    labels: text("labels", { mode: "json" }).$type<string[]>().notNull().default([]),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (t) => [index("contacts_owner_updated_idx").on(t.ownerId, t.updatedAt)],
);

export const contactEmails = sqliteTable(
  "contact_emails",
  {
    id: id(),
    contactId: cascadeRef("contact_id", () => contacts.id),
    email: text("email").notNull(),
  },
  (t) => [index("contact_emails_contact_idx").on(t.contactId), index("contact_emails_email_idx").on(t.email)],
);

export const contactPhones = sqliteTable(
  "contact_phones",
  {
    id: id(),
    contactId: cascadeRef("contact_id", () => contacts.id),
    e164: text("e164").notNull(),
  },
  (t) => [index("contact_phones_contact_idx").on(t.contactId), index("contact_phones_e164_idx").on(t.e164)],
);

export const contactAddresses = sqliteTable(
  "contact_addresses",
  {
    id: id(),
    contactId: cascadeRef("contact_id", () => contacts.id),
    line: text("line").notNull(),
  },
  (t) => [index("contact_addresses_contact_idx").on(t.contactId)],
);

/**
 * A contact deleted by its owner (`DELETE /contacts/{id}`, `/contacts/clear`),
 * remembered for 90 days so another device learns of it through
 * `GET /contacts/deleted` (docs/contacts-sync.md). Written by the batch that
 * deletes; pruned by the daily cron.
 */
export const contactTombstones = sqliteTable(
  "contact_tombstones",
  {
    id: id(),
    ownerId: cascadeRef("owner_id", () => people.id),
    /** The deleted contact's id (no reference: the contact is gone). */
    contactId: integer("contact_id").notNull(),
    deletedAt: timestamp("deleted_at").notNull(),
  },
  (t) => [
    index("contact_tombstones_owner_deleted_idx").on(t.ownerId, t.deletedAt),
    // The daily prune finds the due tombstones through it, never by scanning the table.
    index("contact_tombstones_deleted_idx").on(t.deletedAt),
  ],
);

/**
 * A request from `requesterId` asking `targetId` for trust. At most one
 * pending request per pair (partial unique index); decided requests stay as
 * history and the pair may ask again (docs/decisions.md).
 */
export const trustRequests = sqliteTable(
  "trust_requests",
  {
    id: id(),
    requesterId: cascadeRef("requester_id", () => people.id),
    targetId: cascadeRef("target_id", () => people.id),
    contactReason: text("contact_reason").notNull().default(""),
    status: text("status", { enum: ["pending", "trusted", "untrusted"] })
      .notNull()
      .default("pending"),
    decidedAt: timestamp("decided_at"),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (t) => [
    uniqueIndex("trust_requests_pending_uq")
      .on(t.requesterId, t.targetId)
      .where(sql`status = 'pending'`),
    index("trust_requests_target_idx").on(t.targetId, t.status),
  ],
);

/** The trust decision a person made about another person. */
export const personTrust = sqliteTable(
  "person_trust",
  {
    personId: cascadeRef("person_id", () => people.id),
    trustedPersonId: cascadeRef("trusted_person_id", () => people.id),
    trusted: flag("trusted").notNull(),
    updatedAt: updatedAt(),
  },
  (t) => [
    primaryKey({ columns: [t.personId, t.trustedPersonId] }),
    index("person_trust_trusted_idx").on(t.trustedPersonId),
  ],
);

/**
 * A person's trust setting for a company: callers (trust-lookup) and consent
 * vendors (the container's `trust` field) share it.
 */
export const companyTrust = sqliteTable(
  "company_trust",
  {
    personId: cascadeRef("person_id", () => people.id),
    companyId: cascadeRef("company_id", () => companies.id),
    trust: text("trust", { enum: ["trusted", "negative"] }).notNull(),
    updatedAt: updatedAt(),
  },
  (t) => [primaryKey({ columns: [t.personId, t.companyId] }), index("company_trust_company_idx").on(t.companyId)],
);
