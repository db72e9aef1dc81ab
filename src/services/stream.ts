import { readTicket, RESUME_LIMIT, TICKET_TTL_MS, ticketFor, ticketPayload } from "../domain/stream";
import { base64url, hmacKey, hmacSign, hmacVerify, sha256Hex } from "../lib/crypto";
import { keyOfSecret } from "../lib/secrets";
import type { Backlog, ConnectParams } from "../objects/person/api";
import { activitiesAfter } from "./activities";
import type { Deps } from "./deps";
import { recordRefuses } from "./tokens";

/*
 * The live stream of a person (docs/realtime.md): the Worker authenticates
 * the upgrade, reads what a resume missed (GET /activity's page, names
 * included), and hands the upgrade to the person's object, which keeps the
 * socket with the hibernation API and sends every later event itself.
 */

/**
 * Opens `me`'s stream with token `tokenId`. With `after`, the records after
 * that id come first (at most `RESUME_LIMIT`, then a `resync` event).
 */
/** Whose stream, with which token, and when that token expires (if it does). */
export type StreamHolder = { me: number; tokenId: number; until?: number | undefined };

export async function openStream(deps: Deps, { me, tokenId, until }: StreamHolder, after: number | undefined) {
  let backlog: Backlog | null = null;
  if (after !== undefined) {
    const rows = await activitiesAfter(deps, me, after, RESUME_LIMIT + 1);
    backlog = { after, rows: rows.slice(0, RESUME_LIMIT), more: rows.length > RESUME_LIMIT };
  }
  const stub = deps.objects.of(me);
  // An upgrade carries no body into the object: the resume's records go first, by RPC, under a key.
  const key = backlog ? crypto.randomUUID() : null;
  if (backlog && key) await stub.stageStream(key, backlog);
  const params: ConnectParams = { me, tokenId, backlog: key, ...(until ? { until } : {}) };
  // The object's one HTTP entry: an upgrade the Worker has checked (objects/person/person.ts `fetch`).
  const url = new URL("https://person.internal/stream");
  url.searchParams.set("connect", JSON.stringify(params));
  const answer = await stub.fetch(new Request(url, { headers: { Upgrade: "websocket" } }));
  // Headers of a stub's answer are immutable; the app's middleware adds its own (request id).
  return new Response(null, {
    status: answer.status,
    webSocket: answer.webSocket,
    headers: new Headers(answer.headers),
  });
}

/*
 * Stream tickets (docs/realtime.md, "From a browser: a ticket";
 * docs/security.md, "Stream tickets"): signed by the Worker with
 * STREAM_TICKET_KEY (HMAC-SHA-256), bound to the person and the token that
 * asked, valid `TICKET_TTL_MS`. A ticket is checked here before any object is
 * addressed, so one nobody minted creates no object and writes nothing; only
 * then does the person's object spend it (its one use), and the token is
 * checked again, so a ticket never outlives its token.
 */

/** This isolate's key, imported once per secret value. */
let ticketKey: { secret: string; key: Promise<CryptoKey> } | null = null;

/** The HMAC key of tickets, or the 503 naming STREAM_TICKET_KEY. */
function keyOfTickets({ streamTicketKey }: Deps): Promise<CryptoKey> {
  const raw = keyOfSecret("STREAM_TICKET_KEY", streamTicketKey);
  if (ticketKey?.secret !== streamTicketKey) ticketKey = { secret: streamTicketKey!, key: hmacKey(raw) };
  return ticketKey!.key;
}

/** A one-use ticket for `me`'s stream, valid `TICKET_TTL_MS`, bound to the token (`token`) that asked for it. */
export async function mintStreamTicket(deps: Deps, me: number, tokenId: number, token: string, now: Date) {
  const key = await keyOfTickets(deps);
  const claims = {
    personId: me,
    tokenId,
    expiresAt: now.getTime() + TICKET_TTL_MS,
    nonce: base64url(crypto.getRandomValues(new Uint8Array(16))),
  };
  const tokenHash = await sha256Hex(token);
  await deps.objects.write(me, (person) => person.mintStreamTicket(claims.nonce, tokenId, tokenHash, claims.expiresAt));
  return {
    ticket: ticketFor(claims, await hmacSign(key, ticketPayload(claims))),
    expires_at: new Date(claims.expiresAt).toISOString(),
  };
}

/**
 * Spends a ticket: whose stream it opens and with which token, or null
 * (forged, expired, spent, or its token no longer valid). Its shape, MAC and
 * expiry are checked before the person's object is addressed.
 */
export async function redeemStreamTicket(deps: Deps, ticket: string, now: Date): Promise<StreamHolder | null> {
  const read = readTicket(ticket);
  if (!read) return null;
  const { claims, mac } = read;
  if (!(await hmacVerify(await keyOfTickets(deps), ticketPayload(claims), mac))) return null;
  if (claims.expiresAt <= now.getTime() || claims.expiresAt > now.getTime() + TICKET_TTL_MS) return null;
  // The object spends it and answers for its device (revoked, expired, its person gone: null); no D1.
  const device = await deps.objects.of(claims.personId).redeemStreamTicket(claims.nonce, claims.tokenId);
  if (device === null || (await recordRefuses(deps, device.tokenHash))) return null;
  return { me: claims.personId, tokenId: claims.tokenId, until: device.expiresAt ?? undefined };
}
