import { sql } from "drizzle-orm";
import { index, integer, primaryKey, sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";
import { activityTypes, partyTypes } from "../../db/schema/buzz";
import { timestamp } from "../../db/schema/columns";
import { blockReasons, callPolicies } from "../../domain/caller-verification";
import type { PushTarget } from "../../domain/push";
import type { Profile } from "../../domain/facts";

/*
 * The tables inside one person's Durable Object (docs/architecture.md, "Where
 * data lives"): only that person's rows, so no table has a person column.
 * Migrations: drizzle-person/ (npm run db:generate:person).
 */

/**
 * The person's activity feed: the call records they wrote and the chats they
 * sent or received. A chat is a row in both parties' objects with the same
 * id (docs/decisions.md, "Activity ids"). Ids are allocated by the objects
 * (src/objects/person/ids.ts), never by SQLite.
 */
export const feed = sqliteTable(
  "feed",
  {
    id: integer("id").primaryKey(),
    type: text("type", { enum: activityTypes }).notNull(),
    sendableType: text("sendable_type", { enum: partyTypes }).notNull(),
    sendableId: integer("sendable_id").notNull(),
    receivableType: text("receivable_type", { enum: partyTypes }).notNull(),
    receivableId: integer("receivable_id").notNull(),
    callTime: integer("call_time").notNull().default(0),
    message: text("message"),
    messageId: text("message_id"),
    createdAt: timestamp("created_at").notNull(),
  },
  (t) => [
    // The idempotency key of a message: a retry, or the sender's forward arriving twice, finds it.
    uniqueIndex("feed_message_uq").on(t.sendableType, t.sendableId, t.messageId),
    index("feed_created_idx").on(t.createdAt),
  ],
);

/** Calls the telephony provider was told not to put through to this person. */
export const blockedCalls = sqliteTable(
  "blocked_calls",
  {
    id: integer("id").primaryKey(),
    callerId: text("caller_id"),
    countryCode: text("country_code").notNull(),
    phoneNumber: text("phone_number").notNull(),
    /** Why verification blocked it (`verification failed`, `verification required`); null: the caller is not trusted. */
    reason: text("reason", { enum: blockReasons }),
    createdAt: timestamp("created_at").notNull(),
  },
  (t) => [index("blocked_calls_created_idx").on(t.createdAt)],
);

/** What the person recorded per UTC day: the daily activity budget (docs/security.md). */
export const activityDays = sqliteTable("activity_days", {
  /** Days since 1970-01-01, UTC. */
  day: integer("day").primaryKey(),
  records: integer("records").notNull(),
  /** UTF-8 bytes of message text. */
  textBytes: integer("text_bytes").notNull(),
});

/**
 * What this person received from others per UTC day (chats): the receiving
 * budget, so many senders together cannot fill one person's object.
 */
export const receivedDays = sqliteTable("received_days", {
  /** Days since 1970-01-01, UTC. */
  day: integer("day").primaryKey(),
  records: integer("records").notNull(),
  /** UTF-8 bytes of message text. */
  textBytes: integer("text_bytes").notNull(),
});

/**
 * Trust requests this person received (docs/decisions.md, "Trust requests"):
 * at most one pending per requester; a decision closes it and keeps it.
 * Ids are made like the feed's (ids.ts); rows moved in from D1 keep theirs.
 */
export const trustRequests = sqliteTable(
  "trust_requests",
  {
    id: integer("id").primaryKey(),
    requesterId: integer("requester_id").notNull(),
    contactReason: text("contact_reason").notNull().default(""),
    status: text("status", { enum: ["pending", "trusted", "untrusted"] }).notNull(),
    decidedAt: timestamp("decided_at"),
    createdAt: timestamp("created_at").notNull(),
    /** When it was last asked (a decision leaves it): the heartbeat's `last_trust_request`. */
    updatedAt: timestamp("updated_at").notNull(),
  },
  (t) => [
    uniqueIndex("trust_requests_pending_uq")
      .on(t.requesterId)
      .where(sql`status = 'pending'`),
    index("trust_requests_requester_idx").on(t.requesterId),
    index("trust_requests_updated_idx").on(t.updatedAt),
    // `GET /contacts/requests` pages the pending ones newest first by (updated_at, id).
    index("trust_requests_pending_page_idx")
      .on(t.updatedAt, t.id)
      .where(sql`status = 'pending'`),
  ],
);

/** Trust requests this person sent per UTC day, matched or not (at most 100 a day). */
export const trustRequestDays = sqliteTable("trust_request_days", {
  /** Days since 1970-01-01, UTC. */
  day: integer("day").primaryKey(),
  sent: integer("sent").notNull(),
});

/* ---------- contacts (docs/contacts-sync.md) ---------- */

/**
 * The person's address book. Ids are made like the feed's (ids.ts), so no
 * two people's contacts share an id; contacts moved in from D1 keep theirs.
 */
export const contacts = sqliteTable(
  "contacts",
  {
    id: integer("id").primaryKey(),
    displayName: text("display_name").notNull().default(""),
    birthday: text("birthday"),
    labels: text("labels", { mode: "json" }).$type<string[]>().notNull(),
    createdAt: timestamp("created_at").notNull(),
    updatedAt: timestamp("updated_at").notNull(),
  },
  (t) => [index("contacts_updated_idx").on(t.updatedAt)],
);

/** The kinds of a contact's values: the three collections of a Contact. */
export const contactValueKinds = ["email", "phone", "address"] as const;
export type ContactValueKind = (typeof contactValueKinds)[number];

/**
 * A contact's emails, phones (E.164) and addresses, in the order written:
 * one table, since the three are written, replaced and read alike.
 */
export const contactValues = sqliteTable(
  "contact_values",
  {
    contactId: integer("contact_id")
      .notNull()
      .references(() => contacts.id, { onDelete: "cascade" }),
    kind: text("kind", { enum: contactValueKinds }).notNull(),
    position: integer("position").notNull(),
    value: text("value").notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.contactId, t.kind, t.position] }),
    // Contacts with a phone (call-lookup) and the phones of a bucket (the index keys).
    index("contact_values_kind_value_idx").on(t.kind, t.value),
  ],
);

/** A contact the person deleted, remembered for 90 days (`GET /contacts/deleted`). */
export const contactTombstones = sqliteTable(
  "contact_tombstones",
  {
    contactId: integer("contact_id").primaryKey(),
    deletedAt: timestamp("deleted_at").notNull(),
  },
  (t) => [index("contact_tombstones_deleted_idx").on(t.deletedAt)],
);

/* ---------- trust decisions ---------- */

/** What this person decided about another person (`POST /contacts/trust/{id}`). */
export const personTrust = sqliteTable("person_trust", {
  personId: integer("person_id").primaryKey(),
  trusted: integer("trusted", { mode: "boolean" }).notNull(),
  updatedAt: timestamp("updated_at").notNull(),
});

/** This person's setting for a company: its phones, and the vendor trust of consent containers. */
export const companyTrust = sqliteTable("company_trust", {
  companyId: integer("company_id").primaryKey(),
  trust: text("trust", { enum: ["trusted", "negative"] }).notNull(),
  updatedAt: timestamp("updated_at").notNull(),
});

/**
 * The mirror: what other people decided about *this* person, sent by the
 * deciding person's object (`trustedBy`). "Knows the reader" reads it.
 */
export const trustedBy = sqliteTable("trusted_by", {
  personId: integer("person_id").primaryKey(),
  trusted: integer("trusted", { mode: "boolean" }).notNull(),
  decidedAt: integer("decided_at").notNull(),
});

/** Decisions whose mirror has not reached the other person's object yet; the alarm retries them. */
export const mirrorOutbox = sqliteTable("mirror_outbox", {
  personId: integer("person_id").primaryKey(),
  trusted: integer("trusted", { mode: "boolean" }).notNull(),
  decidedAt: integer("decided_at").notNull(),
});

/**
 * Trust requests this person sent that have not reached the other person's
 * object yet (one row per recipient: asking again replaces it); written in
 * the transaction that charges the request, delivered after it and retried
 * by the alarm until it lands (docs/architecture.md, "What crosses people").
 */
export const requestOutbox = sqliteTable("request_outbox", {
  personId: integer("person_id").primaryKey(),
  requesterId: integer("requester_id").notNull(),
  reason: text("reason").notNull(),
  askedAt: integer("asked_at").notNull(),
});

/**
 * One row once the person's account is gone and this object was erased:
 * from then on it refuses every write (a late blocked call, a delivery
 * retried by a peer, a fact push, a key rewrite). Ids are never reused.
 */
export const erasure = sqliteTable("erasure", {
  one: integer("one").primaryKey(),
  erasedAt: integer("erased_at").notNull(),
});

/* ---------- the trust-lookup keys this object owns ---------- */

/**
 * What the platform (D1) says about this person, as the object last heard
 * it: their id, secure number and companies. Pushed by D1's index work
 * (`prs:` keys) and by a lookup that missed; one row.
 */
export const facts = sqliteTable("facts", {
  one: integer("one").primaryKey(),
  personId: integer("person_id").notNull(),
  e164: text("e164"),
  companies: text("companies", { mode: "json" }).$type<number[]>().notNull(),
  /** D1's version of these facts (`people.facts_version`): an older push is ignored. */
  version: integer("version").notNull().default(0),
  /** The secure number's parts, as the heartbeat answers them (null with `e164`, or not told yet). */
  countryCode: text("country_code"),
  number: text("number"),
  /** `people.updated_at` (ms); null: not told yet (the heartbeat reads D1). */
  userAt: integer("user_at"),
  /** The newest `memberships.updated_at` of the person (ms); null: none. */
  membershipAt: integer("membership_at"),
  /** Their names and companies with names and roles, as `GET /me` shows them; null: not told yet (read from D1 once). */
  profile: text("profile", { mode: "json" }).$type<Profile>(),
});

/**
 * The other people this object heard of (docs/architecture.md, "Names travel
 * with facts"): each one's names and companies as their own object last told
 * them, with a chat or a trust request either way, or when a feed page named
 * them (`learnedAt`, ms: a page asks again after a day). Who may see the
 * names is decided when they are shown (peers.ts).
 */
export const peers = sqliteTable("peers", {
  personId: integer("person_id").primaryKey(),
  firstName: text("first_name").notNull(),
  middleName: text("middle_name"),
  lastName: text("last_name").notNull(),
  companies: text("companies", { mode: "json" }).$type<number[]>().notNull(),
  learnedAt: integer("learned_at").notNull(),
  /** The facts version of the card these names came from: an older card arriving late changes nothing. */
  version: integer("version").notNull().default(0),
});

/**
 * The `rcv:`/`rcvn:` keys: the digest of the value last put and when
 * (`digest` null: deleted), and whether a write is due (`due`; `force`: put
 * even when the digest matches, because KV lacks the key). `version` grows
 * with each change, so a write finished after a newer change leaves the key
 * due; `attempts` counts failed writes (the alarm retries them).
 */
export const indexKeys = sqliteTable("index_keys", {
  key: text("key").primaryKey(),
  digest: text("digest"),
  writtenAt: integer("written_at"),
  due: integer("due", { mode: "boolean" }).notNull(),
  force: integer("force", { mode: "boolean" }).notNull(),
  version: integer("version").notNull(),
  attempts: integer("attempts").notNull(),
});

/* ---------- the person's own settings ---------- */

/**
 * The person's settings (`PUT /me/settings`), one row. `calls`: who may ring
 * them (docs/decisions.md, "Caller verification"); it travels in their
 * receiver record, so the lookup honours it without reading anything else.
 */
export const settings = sqliteTable("settings", {
  one: integer("one").primaryKey(),
  calls: text("calls", { enum: callPolicies }).notNull(),
  updatedAt: timestamp("updated_at").notNull(),
});

/* ---------- Idempotency-Key of this person's writes (idempotency.ts) ---------- */

/**
 * One row per key this person sent on a creating POST: the request's
 * fingerprint, when it was claimed, and the first answer (null while that
 * request runs). Pruned 24 h after the claim by the alarm.
 */
export const idempotencyKeys = sqliteTable(
  "idempotency_keys",
  {
    key: text("key").primaryKey(),
    fingerprint: text("fingerprint").notNull(),
    claimedAt: integer("claimed_at").notNull(),
    status: integer("status"),
    /** A copy of the answer's body; null when `activityId` renders it. */
    body: text("body"),
    contentType: text("content_type"),
    location: text("location"),
    /** The feed record whose rendering is the answer (POST /apps/buzz/activity): a reference, not a copy. */
    activityId: integer("activity_id"),
  },
  (t) => [index("idempotency_keys_claimed_at_idx").on(t.claimedAt)],
);

/** Keys this person claimed per UTC day: at most 1,000 (docs/security.md, "What a stranger can cost"). */
export const idempotencyDays = sqliteTable("idempotency_days", {
  /** Days since 1970-01-01, UTC. */
  day: integer("day").primaryKey(),
  keys: integer("keys").notNull(),
});

/* ---------- push (push.ts) ---------- */

/**
 * Where each of the person's devices is woken when it has no open stream (docs/app.md, "Push"): one
 * registration per device (its person token's id), as `PUT /me/devices/{id}/push` gave it. Goes when
 * the device is deleted (`tokenRevoked`) or the push service answers 404 or 410.
 */
export const pushRegistrations = sqliteTable("push_registrations", {
  deviceId: integer("device_id").primaryKey(),
  kind: text("kind", { enum: ["webpush", "fcm", "apns"] }).notNull(),
  target: text("target", { mode: "json" }).$type<PushTarget>().notNull(),
  updatedAt: integer("updated_at").notNull(),
});

/* ---------- devices (devices.ts) ---------- */

/**
 * The person's devices (docs/security.md, "Tokens"): one row per person token this object has seen — told
 * at sign-in, or adopted at the token's first check here — with its name (null: minted by the operator),
 * its day of last use and its revocation. A revoked row stays, so a revocation that arrives before the
 * token's first check is kept; the object is the one place that decides whether a person token still
 * opens this person's requests.
 */
export const devices = sqliteTable("devices", {
  tokenId: integer("token_id").primaryKey(),
  name: text("name"),
  createdAt: integer("created_at").notNull(),
  /** When a use was last recorded (ms; recorded at most once a day, D1 told then); null: none yet. */
  usedAt: integer("used_at"),
  expiresAt: integer("expires_at"),
  revokedAt: integer("revoked_at"),
});
