import { iso } from "../lib/time";
import type { BlockReason } from "./caller-verification";

/** The kinds of activity records (the contract's list). */
export const activityTypes = [
  "chat_message",
  "chat_read_indicator",
  "chat_reaction_emoji",
  "incoming_call_missed",
  "incoming_call_connected_insecure",
  "incoming_call_connected_secure",
  "outgoing_call_missed",
  "outgoing_call_connected_insecure",
  "outgoing_call_connected_secure",
] as const;

export const partyTypes = ["person", "company"] as const;

export type ActivityType = (typeof activityTypes)[number];
export type PartyType = (typeof partyTypes)[number];

/** An activity as recorded (`POST /apps/buzz/activity`), shared by the Worker and the person's object. */
export type ActivityInput = {
  type: ActivityType;
  sendable_type: PartyType;
  sendable_id: number;
  receivable_type: PartyType;
  receivable_id: number;
  call_time: number;
  message?: string;
  message_id?: string;
};

/*
 * The wire shapes of a person's own records, rendered once: GET /activity,
 * GET /apps/buzz/blocked and GET /contacts/requests answer them, and the live
 * stream (docs/realtime.md) sends the same shapes from the person's object.
 */

type PartyKind = "person" | "company";

/** A record of a person's feed as the object stores it (objects/person/schema.ts). */
export type FeedRecord<T extends string = string> = {
  id: number;
  type: T;
  sendableType: PartyKind;
  sendableId: number;
  receivableType: PartyKind;
  receivableId: number;
  callTime: number;
  message: string | null;
  messageId: string | null;
  createdAt: Date | number;
};

export type PersonParty = {
  id: number;
  first_name: string | null;
  middle_name: string | null;
  last_name: string | null;
};
export type CompanyParty = { id: number; name: string | null };
/** A party as a reader sees it: names only when it knows the reader; null when it no longer exists. */
export type Party = PersonParty | CompanyParty | null;

/** The created activity as the POST answers it: party types as written. */
export const createdActivity = <T extends string>(row: FeedRecord<T>) => ({
  id: row.id,
  type: row.type,
  sendable_type: row.sendableType,
  sendable_id: row.sendableId,
  receivable_type: row.receivableType,
  receivable_id: row.receivableId,
  call_time: row.callTime,
  message: row.message,
  message_id: row.messageId,
  created_at: iso(new Date(row.createdAt))!,
});

/**
 * The body POST /apps/buzz/activity answers for `row`, byte for byte: the
 * person's object renders a kept Idempotency-Key answer from its feed row
 * with it instead of keeping a copy (objects/person/idempotency.ts).
 */
export const createdActivityBody = <T extends string>(row: FeedRecord<T>) =>
  JSON.stringify({ success: true as const, data: createdActivity(row) });

const READ_TYPES = { person: "AppModelsPerson", company: "AppModelsCompany" } as const;

/** An activity as a reader's feed shows it (GET /activity, the stream's `activity` event). */
export const readActivity = <T extends string>(row: FeedRecord<T>, party: (type: PartyKind, id: number) => Party) => ({
  ...createdActivity(row),
  sendable_type: READ_TYPES[row.sendableType],
  receivable_type: READ_TYPES[row.receivableType],
  sendable: party(row.sendableType, row.sendableId),
  receivable: party(row.receivableType, row.receivableId),
});

export type ActivityView = ReturnType<typeof readActivity<string>>;

/** A party whose names the renderer does not have: its id, names null. */
export const unnamedParty = (type: PartyKind, id: number): Party =>
  type === "person" ? { id, first_name: null, middle_name: null, last_name: null } : { id, name: null };

/**
 * A blocked call as GET /apps/buzz/blocked shows it: `id` is the person's own id
 * (docs/decisions.md, "Blocked calls"), `blocked_call_id` the call's own.
 */
export const blockedCallView = (
  personId: number,
  row: {
    id: number;
    callerId: string | null;
    countryCode: string;
    phoneNumber: string;
    reason?: BlockReason | null;
    createdAt: Date | number;
  },
) => ({
  id: personId,
  blocked_call_id: row.id,
  caller_id: row.callerId ?? "",
  country_code: row.countryCode,
  phone_number: row.phoneNumber,
  reason: row.reason ?? null,
  created_at: iso(new Date(row.createdAt))!,
});

/** A requester's names, as D1 holds them. */
export type RequesterNames = { id: number; first_name: string; middle_name: string | null; last_name: string };

/** A pending trust request as GET /contacts/requests shows it. */
export const trustRequestView = (
  requester: RequesterNames,
  request: { contactReason: string; updatedAt: Date | number },
) => ({
  ...requester,
  contact_reason: request.contactReason,
  updated_at: iso(new Date(request.updatedAt))!,
});
