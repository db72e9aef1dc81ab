import type { ActivityView, RequesterNames } from "./activity";
import type { blockedCallView, trustRequestView } from "./activity";

/*
 * The live stream of a person (docs/realtime.md): what crosses from the
 * Worker to the person's object and what the object sends on each socket.
 */

/** Open sockets per person; an 11th closes the oldest. */
export const MAX_STREAMS = 10;
/** Records sent on a resume (`?after=`) before a `resync` event. */
export const RESUME_LIMIT = 500;
/** How long a ticket (`POST /apps/buzz/stream/tickets`) can be used, once. */
export const TICKET_TTL_MS = 60_000;

/**
 * How long a socket may stay silent (no `ping`, which apps send every 30–60 s) before its device
 * counts as asleep: a phone that lost its network without a close frame still looks open to the
 * runtime for a while, and its device is woken by push meanwhile (docs/realtime.md, "Pings").
 */
export const SILENT_SOCKET_MS = 150_000;

/** Close codes the server sends (4000–4999 are the application's). */
export const STREAM_CLOSE = {
  replaced: { code: 4000, reason: "more than 10 connections of this person: the oldest is closed" },
  revoked: { code: 4001, reason: "the token of this connection is no longer valid" },
} as const;

/** One frame on the socket: a JSON text `{"type", "data"}`. */
export type StreamEvent =
  | { type: "activity"; data: ActivityView }
  | { type: "trust_request"; data: ReturnType<typeof trustRequestView> }
  | { type: "contacts"; data: { updated_at: string } }
  | { type: "blocked_call"; data: ReturnType<typeof blockedCallView> }
  | { type: "resync" }
  | AccountEvent;

/** A device as `GET /me/devices` lists it. */
export type DeviceView = {
  id: number;
  name: string;
  created_at: string;
  last_used_on: string | null;
  current: boolean;
};

/**
 * Events about the account itself: `phones` (a confirmation of one of the person's phones ended: someone
 * proved the number, or the operator released it; read GET /me/phones) and `device` (a new sign-in).
 */
export type AccountEvent = { type: "phones" } | { type: "device"; data: Omit<DeviceView, "current" | "last_used_on"> };

/** The requester's names as their trust request carried them, for the receiver's stream. */
export type Requester = RequesterNames;

/**
 * What a stream ticket binds (docs/realtime.md, "From a browser: a ticket";
 * docs/security.md, "Stream tickets"): whose stream, the token that asked
 * for it, until when (ms), and a random nonce its one use is remembered by.
 */
export type TicketClaims = { personId: number; tokenId: number; expiresAt: number; nonce: string };

/** The text a ticket's HMAC-SHA-256 covers: a version, then every claim. */
export const ticketPayload = ({ personId, tokenId, expiresAt, nonce }: TicketClaims) =>
  `st1|${personId}|${tokenId}|${expiresAt}|${nonce}`;

/** A ticket as the client holds it: `st_<person>.<token>.<expires ms>.<nonce>.<mac>`, all base64url-safe. */
export const ticketFor = ({ personId, tokenId, expiresAt, nonce }: TicketClaims, mac: string) =>
  `st_${personId}.${tokenId}.${expiresAt}.${nonce}.${mac}`;

const TICKET = /^st_([1-9]\d{0,15})\.([1-9]\d{0,15})\.([1-9]\d{12,15})\.([A-Za-z0-9_-]{22})\.([A-Za-z0-9_-]{43})$/;

/** A ticket's claims and MAC, read but not yet verified; null when it is not a ticket's shape. */
export function readTicket(ticket: string): { claims: TicketClaims; mac: string } | null {
  const match = TICKET.exec(ticket);
  if (!match) return null;
  const [personId, tokenId, expiresAt] = [match[1], match[2], match[3]].map(Number) as [number, number, number];
  if (![personId, tokenId, expiresAt].every(Number.isSafeInteger)) return null;
  return { claims: { personId, tokenId, expiresAt, nonce: match[4]! }, mac: match[5]! };
}
