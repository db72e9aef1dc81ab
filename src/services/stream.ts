import { personOfTicket, RESUME_LIMIT, TICKET_TTL_MS, ticketFor } from "../domain/stream";
import type { Backlog, ConnectParams } from "../objects/person/api";
import { activitiesAfter } from "./activities";
import type { Deps } from "./deps";

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
export async function openStream(deps: Deps, me: number, tokenId: number, after: number | undefined) {
  let backlog: Backlog | null = null;
  if (after !== undefined) {
    const rows = await activitiesAfter(deps, me, after, RESUME_LIMIT + 1);
    backlog = { after, rows: rows.slice(0, RESUME_LIMIT), more: rows.length > RESUME_LIMIT };
  }
  const stub = deps.objects.of(me);
  // An upgrade carries no body into the object: the resume's records go first, by RPC, under a key.
  const key = backlog ? crypto.randomUUID() : null;
  if (backlog && key) await stub.stageStream(key, backlog);
  const params: ConnectParams = { me, tokenId, backlog: key };
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

/** A one-use ticket for `me`'s stream, valid `TICKET_TTL_MS`, bound to the token that asked for it. */
export async function mintStreamTicket(deps: Deps, me: number, tokenId: number, now: Date) {
  const secret = await deps.objects.write(me, (person) => person.mintStreamTicket(tokenId));
  return { ticket: ticketFor(me, secret), expires_at: new Date(now.getTime() + TICKET_TTL_MS).toISOString() };
}

/** Spends a ticket: whose stream it opens and with which token, or null (unknown, spent, expired). */
export async function redeemStreamTicket(deps: Deps, ticket: string): Promise<{ me: number; tokenId: number } | null> {
  const me = personOfTicket(ticket);
  if (me === null) return null;
  const tokenId = await deps.objects.of(me).redeemStreamTicket(ticket.slice(`st_${me}_`.length));
  return tokenId === null ? null : { me, tokenId };
}
