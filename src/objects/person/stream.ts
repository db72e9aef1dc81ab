import {
  blockedCallView,
  readActivity,
  trustRequestView,
  type ActivityView,
  type FeedRecord,
  type Party,
} from "../../domain/activity";
import { MAX_STREAMS, SILENT_SOCKET_MS, STREAM_CLOSE, type Requester, type StreamEvent } from "../../domain/stream";

/*
 * A person's live streams (docs/realtime.md), held by their own object with
 * the hibernation API: an idle socket costs no running object. What each
 * socket must remember across hibernation is its attachment (the token it
 * was opened with, the last activity id it was sent, when it opened);
 * everything in memory here is only a cache of the current instance.
 *
 * Activity is *pulled* from the feed after every write (`pump`): each socket
 * gets the rows after its last id, under the feed's reservation barrier, so
 * it sees every record once and in id order, the way a reader paging with
 * GET /activity would. Other events are pushed as they happen.
 */

/** What the object tells the stream about its feed. */
export type FeedSource = {
  /** Rows after `afterId`, oldest first, under the reservation barrier. */
  after(afterId: number, limit: number): FeedRecord[];
  /** The newest id in the feed (0: empty). */
  newest(): number;
  /** Where a reader starts who has seen everything it may see now: below a chat's reservation (`Feed.seen`). */
  seen(): number;
  /** How a reader of `rows` sees their parties: from what the object knows, asking nobody (peers.ts). */
  parties(rows: FeedRecord[]): (type: "person" | "company", id: number) => Party;
};

/** `until`: when the socket's token expires (ms), if it does. */
type Attachment = { me: number; tokenId: number; last: number; since: number; until?: number };

/** What the Worker sends with an upgrade: who, with which token, and the records missed (already rendered). */
export type ConnectParams = {
  me: number;
  tokenId: number;
  /** When the token expires (ms), if it does: the socket closes then. */
  until?: number;
  /** The key of the resume's records staged just before (`stage`), or null: no resume. */
  backlog: string | null;
};

/** A resume's records (GET /activity's shape), oldest first, and whether more were missed than sent. */
export type Backlog = { after: number; rows: ActivityView[]; more: boolean };

const TICKET_PREFIX = "stream-ticket:";
/** Rows one pump sends a socket at most (live traffic never comes near it). */
const PUMP_LIMIT = 500;

export class Stream {
  /** Resumes staged by the Worker for the upgrade that follows at once (`stage`, `connect`). */
  private readonly staged = new Map<string, Backlog>();

  constructor(
    private readonly ctx: DurableObjectState,
    private readonly feed: FeedSource,
  ) {
    // Answered by the runtime without waking the object.
    ctx.setWebSocketAutoResponse(new WebSocketRequestResponsePair("ping", "pong"));
  }

  /** Whether any socket is open. */
  open(): boolean {
    return this.ctx.getWebSockets().length > 0;
  }

  /**
   * The devices (token ids) with an open socket heard from lately (connected or pinged within
   * `SILENT_SOCKET_MS`): push wakes only the others (push.ts).
   */
  openDevices(now = Date.now()): Set<number> {
    const heard = ({ ws, att }: { ws: WebSocket; att: Attachment }) =>
      Math.max(att.since, this.ctx.getWebSocketAutoResponseTimestamp(ws)?.getTime() ?? 0);
    return new Set(
      this.sockets()
        .filter((socket) => heard(socket) > now - SILENT_SOCKET_MS)
        .map(({ att }) => att.tokenId),
    );
  }

  /* ---------- connecting ---------- */

  /**
   * Accepts a socket: closes the oldest beyond `MAX_STREAMS`, sends the
   * resume's records (or, past `RESUME_LIMIT`, a `resync`), then whatever
   * the feed holds after them. Without a resume it starts after the newest
   * record. All of it in one turn: no write can fall between.
   */
  connect({ me, tokenId, until, backlog: key }: ConnectParams): Response {
    const backlog = key === null ? null : this.staged.get(key);
    if (key !== null) this.staged.delete(key);
    const open = this.sockets().sort((a, b) => a.att.since - b.att.since);
    for (const { ws } of open.slice(0, Math.max(0, open.length - MAX_STREAMS + 1))) {
      ws.close(STREAM_CLOSE.replaced.code, STREAM_CLOSE.replaced.reason);
    }
    const [client, server] = Object.values(new WebSocketPair()) as [WebSocket, WebSocket];
    this.ctx.acceptWebSocket(server);
    const att: Attachment = { me, tokenId, last: this.feed.seen(), since: Date.now(), ...(until ? { until } : {}) };
    if (backlog === undefined) {
      // Staged in an instance that is gone (it cannot sleep between the two calls, but is not trusted to):
      // nothing is missed, the records come through the feed, named from what the object knows.
      att.last = 0;
    } else if (backlog) {
      for (const data of backlog.rows) server.send(JSON.stringify({ type: "activity", data } satisfies StreamEvent));
      if (backlog.more) server.send(JSON.stringify({ type: "resync" } satisfies StreamEvent));
      // Then what landed since the Worker read them; a resume past the newest id starts at the newest.
      else att.last = backlog.rows.at(-1)?.id ?? Math.min(backlog.after, att.last);
    }
    server.serializeAttachment(att);
    this.pumpTo(server, att);
    return new Response(null, { status: 101, webSocket: client });
  }

  /** Keeps a resume's records for the upgrade that follows; one left unused goes after a minute. */
  stage(key: string, backlog: Backlog): void {
    this.staged.set(key, backlog);
    setTimeout(() => this.staged.delete(key), 60_000);
  }

  /* ---------- tickets ---------- */

  /*
   * A ticket's one use (docs/realtime.md). The Worker signs tickets and
   * checks the signature, the person and the expiry before it addresses this
   * object at all (services/stream.ts), so only a ticket it minted reaches
   * here. What this keeps per ticket, by its nonce: the token it was made
   * with (its id, and its SHA-256, which the Worker checks again on
   * redemption) and until when; expired ones are dropped at the next mint.
   */

  /** Remembers a ticket minted with token `tokenId` (SHA-256 `tokenHash`), usable until `until` (ms). */
  mintTicket(nonce: string, tokenId: number, tokenHash: string, until: number): void {
    const now = Date.now();
    for (const [key, value] of this.ctx.storage.kv.list<{ until: number }>({ prefix: TICKET_PREFIX })) {
      if (value.until <= now) this.ctx.storage.kv.delete(key);
    }
    this.ctx.storage.kv.put(TICKET_PREFIX + nonce, { tokenId, tokenHash, until });
  }

  /**
   * Spends the ticket `nonce` made with `tokenId`: the token's SHA-256, or
   * null when it is unknown, spent, expired or made with another token. Read
   * and deleted in one synchronous step of the one object that holds it, so
   * two connections cannot both spend it.
   */
  redeemTicket(nonce: string, tokenId: number): string | null {
    const key = TICKET_PREFIX + nonce;
    const ticket = this.ctx.storage.kv.get<{ tokenId: number; tokenHash?: string; until: number }>(key);
    if (!ticket) return null;
    this.ctx.storage.kv.delete(key);
    return ticket.until > Date.now() && ticket.tokenId === tokenId ? (ticket.tokenHash ?? null) : null;
  }

  /* ---------- events ---------- */

  /** Sends every socket the feed's rows after its last id (the feed's reservation barrier holds back the rest). */
  pump(): void {
    if (!this.open()) return;
    for (const { ws, att } of this.sockets()) this.pumpTo(ws, att);
  }

  trustRequest({ id, first_name, middle_name, last_name }: Requester, reason: string, at: Date): void {
    this.broadcast({
      type: "trust_request",
      data: trustRequestView({ id, first_name, middle_name, last_name }, { contactReason: reason, updatedAt: at }),
    });
  }

  contactsChanged(at: number): void {
    this.broadcast({ type: "contacts", data: { updated_at: new Date(at).toISOString() } });
  }

  blockedCalls(me: number, calls: Parameters<typeof blockedCallView>[1][]): void {
    for (const call of calls) this.broadcast({ type: "blocked_call", data: blockedCallView(me, call) });
  }

  /* ---------- the sockets' lives ---------- */

  /**
   * The client closed: closed back, which hibernatable sockets do not do by
   * themselves (1005 and 1006 cannot be sent, so those get a plain close).
   */
  closed(ws: WebSocket, code: number, reason: string): void {
    try {
      ws.close(code, reason);
    } catch {
      try {
        ws.close();
      } catch {
        // Already closed.
      }
    }
  }

  /**
   * Closes the sockets whose token has expired; answers when the next open
   * one expires (null: none does). Nothing else is checked on a timer: a
   * revocation reaches the object at once (`closeToken`), a removed person's
   * object is erased (`closeAll`), so an idle socket of a token that never
   * expires schedules no alarm and costs nothing (docs/realtime.md).
   */
  closeExpired(now = Date.now()): number | null {
    let next: number | null = null;
    for (const { ws, att } of this.sockets()) {
      if (att.until === undefined) continue;
      if (att.until <= now) ws.close(STREAM_CLOSE.revoked.code, STREAM_CLOSE.revoked.reason);
      else next = Math.min(next ?? Infinity, att.until);
    }
    return next;
  }

  /** Token `tokenId` was revoked (a device signed out or deleted): its sockets close with 4001 now. */
  closeToken(tokenId: number): number {
    const closing = this.sockets().filter(({ att }) => att.tokenId === tokenId);
    for (const { ws } of closing) ws.close(STREAM_CLOSE.revoked.code, STREAM_CLOSE.revoked.reason);
    return closing.length;
  }

  /** An event about the person's account (`phones`, `device`) on every open socket. */
  announce(event: StreamEvent): void {
    this.broadcast(event);
  }

  /** The person is gone: every socket closes as a revoked token's would. */
  closeAll(): void {
    for (const { ws } of this.sockets()) ws.close(STREAM_CLOSE.revoked.code, STREAM_CLOSE.revoked.reason);
  }

  /* ---------- helpers ---------- */

  private sockets(): { ws: WebSocket; att: Attachment }[] {
    return this.ctx.getWebSockets().flatMap((ws) => {
      const att = ws.deserializeAttachment() as Attachment | null;
      return att && ws.readyState === WebSocket.OPEN ? [{ ws, att }] : [];
    });
  }

  private pumpTo(ws: WebSocket, att: Attachment): void {
    const rows = this.feed.after(att.last, PUMP_LIMIT);
    if (rows.length === 0) return;
    const party = this.feed.parties(rows);
    for (const row of rows) {
      const data = readActivity(row, party);
      ws.send(JSON.stringify({ type: "activity", data } satisfies StreamEvent));
    }
    att.last = rows.at(-1)!.id;
    ws.serializeAttachment(att);
  }

  private broadcast(event: StreamEvent): void {
    const frame = JSON.stringify(event);
    for (const { ws } of this.sockets()) ws.send(frame);
  }
}
