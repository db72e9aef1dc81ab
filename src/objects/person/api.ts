import type { BlockReason } from "../../domain/caller-verification";
import type { IndexLinks } from "../../domain/contact-links";
import type { feed, trustRequests } from "./schema";

/*
 * What crosses RPC between the Worker and a person's object (person.ts):
 * the arguments and answers of its methods. The Worker's services import
 * these types from here only, never the class file (services/person-objects.ts
 * alone names the class, for the stub's type).
 */

/* ---------- refusals ---------- */

/**
 * The one shape of a refusal (lib/answer.ts): the object answers it as a
 * value, since errors lose their class over RPC. The Worker turns it into the
 * API's error with one function (`refused`/`accepted`, lib/answer.ts): the same
 * status, the message as the error's text, and a 429's `retryAfter` (seconds)
 * as `Retry-After`.
 */
export type { Answer, Refusal } from "../../lib/answer";

/* ---------- devices (devices.ts) ---------- */

/**
 * A person token as its verification record knows it (name null: minted by the operator; times in ms;
 * `usedAt`: its last use D1 recorded, null for none or unknown).
 */
export type DeviceClaim = {
  tokenId: number;
  name: string | null;
  createdAt: number;
  expiresAt: number | null;
  usedAt: number | null;
};
/** Whether a person token still opens its person's requests; `firstUseToday`: D1's bookkeeping is due. */
export type DeviceCheck = { ok: true; firstUseToday: boolean } | { ok: false; reason: string };

/* ---------- the feed ---------- */

/** A record of the person's feed, as the object stores it. */
export type FeedRow = typeof feed.$inferSelect;

/** A call the provider was told not to put through, as the object keeps it. */
export type BlockedCallRow = {
  callerId: string | null;
  countryCode: string;
  phoneNumber: string;
  /** Why verification blocked it; null or absent: the caller is not trusted. */
  reason?: BlockReason | null;
  createdAt: number;
};

/* ---------- trust requests ---------- */

/** A trust request this person received. */
export type TrustRequestRow = typeof trustRequests.$inferSelect;

/** Where a page of pending requests starts: after this request (its `updated_at` in ms and id). */
export type RequestCursor = { at: number; id: number };

/* ---------- contacts ---------- */

/**
 * A contact as written, already standardized by the route's schema (emails
 * lowercased, phones in E.164, duplicates removed). A field left out keeps its
 * value; a collection that is present replaces the stored one.
 */
export type ContactInput = {
  id?: number;
  display_name?: string;
  birthday?: string | null;
  labels?: string[];
  emails?: string[];
  phone_numbers?: string[];
  addresses?: string[];
};

/** A contact as the object keeps it: every collection, times in milliseconds. */
export type StoredContact = {
  id: number;
  displayName: string;
  birthday: string | null;
  labels: string[];
  emails: string[];
  phones: string[];
  addresses: string[];
  createdAt: number;
  updatedAt: number;
};

/**
 * Contacts as a read answers them, with the people who trusted this person
 * (`trustedMe`). `trustedMeOf`: whom `trustedMe` answers for when it is not
 * everyone (past `MIRROR_INLINE` people, or a list asked about); the reader
 * asks `trustedMe(ids)` about anyone else it needs (services/contacts.ts).
 */
export type ContactRead = {
  items: StoredContact[];
  total: number;
  trustedMe: number[];
  trustedMeOf?: number[];
  /** The links of the items' phones and emails the object keeps, still fresh (links.ts); absent: none asked. */
  links?: IndexLinks;
};

/**
 * At most this many people who trusted the person travel with a read of
 * their contacts (and are bound into its D1 read as one JSON value): what a
 * read binds never grows with how many people chose to trust them.
 */
export const MIRROR_INLINE = 1_000;

/* ---------- trust ---------- */

/** A person's setting for a company: trusted, negative, or (null) none. */
export type CompanySetting = "trusted" | "negative" | null;

/* ---------- what else crosses ---------- */

export type { ActivityInput } from "../../domain/activity";
export type { IndexLinks, LinkCard, LinkedPerson } from "../../domain/contact-links";
export type { CallPolicy } from "../../domain/caller-verification";
export type { Facts, PeerCard } from "../../domain/facts";
export type { OwnAccount } from "./profile";
export type { PushRegistration, PushTarget } from "../../domain/push";
export type { AnswerToKeep, IdempotencyClaim, KeptAnswer } from "../../domain/idempotency";
export type { AccountEvent, Requester } from "../../domain/stream";
export type { ReceiverRecord } from "../../domain/trust-records";
export type { Backlog, ConnectParams } from "./stream";
export type { FeedView } from "./feed";
export type { Sender } from "./senders";
/** The one-time move from D1 (move.ts, docs/move-removal.md): goes with it. */
export type { HeldCounts, MovedContact, MovedFeedRow, MovedRows, MovedTrustRequestRow } from "./move";
