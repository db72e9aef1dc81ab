import type { readActivity } from "../../domain/activity";
import type { BlockReason } from "../../domain/caller-verification";
import type { PeerCard } from "../../domain/facts";
import type { IndexLinks } from "../../domain/contact-links";
import type { ContactCollection } from "../../domain/contact-view";
import type { feed, trustRequests } from "./schema";
import type { ContactFields } from "../../domain/contact-view";

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

/** A record as its reader sees it (GET /activity's shape; feed.ts). */
export type FeedView = ReturnType<typeof readActivity<FeedRow["type"]>>;

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

/** A contact as the object keeps it: every collection, times in milliseconds (one shape with the page's renderer). */
export type StoredContact = ContactFields;

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
 * A page for `GET /contacts` (person.ts `contactListing`): the answer's JSON text and the total, when
 * the object rendered it, else the page as `ContactRead`'s JSON text for the Worker to render.
 */
export type ContactListing = { body: string; total: number; read?: undefined } | { read: string };

/** Which page `contactListing` reads (`since`: changed at or after, ms), and the collections its contacts show. */
export type ContactListingOptions = {
  since: number | null;
  limit: number;
  offset: number;
  include: ContactCollection[];
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

/* ---------- chats between objects (senders.ts) ---------- */

/**
 * What the sender's object tells the receiver's about its person: who they
 * are, their companies and number, and (`card`) their names, which the
 * receiver keeps for its feed and streams (peers.ts).
 */
export type Sender = { personId: number; companies: number[]; e164: string | null; card?: PeerCard | null };

/* ---------- the one-time move from D1 (move.ts, docs/move-removal.md): goes with it ---------- */

/** A trust request moved in from D1: its D1 id, its times in milliseconds. */
export type MovedTrustRequestRow = Omit<TrustRequestRow, "decidedAt" | "createdAt" | "updatedAt"> & {
  decidedAt: number | null;
  createdAt: number;
  updatedAt: number;
};
/** A row moved in from D1: its D1 id, its time in milliseconds. */
export type MovedFeedRow = Omit<FeedRow, "createdAt"> & { createdAt: number };
/** A contact moved in from D1 (services/person-moves.ts): its D1 id and times. */
export type MovedContact = StoredContact;

/** One chunk of a person's rows moved in from D1 (services/person-moves.ts): D1 ids, times in ms. */
export type MovedRows = {
  feed?: MovedFeedRow[];
  blockedCalls?: (BlockedCallRow & { id: number })[];
  trustRequests?: MovedTrustRequestRow[];
  contacts?: MovedContact[];
  tombstones?: { contactId: number; deletedAt: number }[];
  decisions?: { personId: number; trusted: boolean; updatedAt: number }[];
  companySettings?: { companyId: number; trust: "trusted" | "negative"; updatedAt: number }[];
  mirror?: { personId: number; trusted: boolean; decidedAt: number }[];
};

/**
 * The kinds a rerun never brings back: each row is imported once, by its D1 key (an id; for decisions
 * and company settings the other party's id, the order their chunks are read in), and the largest key
 * imported so far is kept in the object's storage. A rerun of the move (after a `mismatch`) imports
 * only rows above it, so what the person deleted or cleared in their object since stays gone.
 * Tombstones and the mirror need no mark: a tombstone is a deletion, and a mirror keeps the newest
 * (move.ts).
 */
export const MARKED = ["feed", "blockedCalls", "trustRequests", "contacts", "decisions", "companySettings"] as const;
export type MarkedKind = (typeof MARKED)[number];
/** How many rows the object holds, per kind; `moved*`: of them, those that came from D1. */
export type HeldCounts = {
  feed: number;
  blockedCalls: number;
  movedFeed: number;
  movedBlockedCalls: number;
  movedTrustRequests: number;
  movedContacts: number;
  tombstones: number;
  decisions: number;
  companySettings: number;
  mirror: number;
  /** The move of this person finished: the object takes no more imports. */
  finished: boolean;
  /** Per kind imported once only, the largest D1 key imported so far (move.ts `MARKED`). */
  marks: Record<MarkedKind, number>;
};

/* ---------- what else crosses ---------- */

export type { ActivityInput } from "../../domain/activity";
export type { IndexLinks, LinkCard, LinkedPerson } from "../../domain/contact-links";
export type { ContactCollection };
export type { CallPolicy } from "../../domain/caller-verification";
export type { Facts, PeerCard } from "../../domain/facts";
export type { OwnAccount } from "./profile";
export type { PushRegistration, PushTarget } from "../../domain/push";
export type { AnswerToKeep, IdempotencyClaim, KeptAnswer } from "../../domain/idempotency";
export type { AccountEvent, Requester } from "../../domain/stream";
export type { ReceiverRecord } from "../../domain/trust-records";
export type { Backlog, ConnectParams } from "./stream";
