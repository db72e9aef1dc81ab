import { DurableObject } from "cloudflare:workers";
import { drizzle, type DrizzleSqliteDODatabase } from "drizzle-orm/durable-sqlite";
import { NOBODY } from "../../domain/trust-records";
import type * as api from "./api";
import * as addressBook from "./address-book";
import * as blocked from "./blocked";
import * as book from "./contacts";
import * as devices from "./devices";
import { Feed, clearFeed } from "./feed";
import { GONE, WriteGate } from "./gate";
import { heartbeatTimes } from "./heartbeat";
import * as idempotency from "./idempotency";
import * as keys from "./index-keys";
import { answerMiss, KeyWriter, rewriteAll, values } from "./index-writer";
import { KeptLinks } from "./links";
import * as mirror from "./mirror";
import * as move from "./move";
import { ownAccount } from "./profile";
import { Push } from "./push";
import * as requests from "./requests";
import { Scheduler } from "./scheduler";
import { Self } from "./self";
import { Stream } from "./stream";
import * as trust from "./trust";

/*
 * One person's own data, in their own Durable Object with SQLite storage (docs/architecture.md, "The
 * Person object"). This class is its RPC surface only: each write passes the gate (gate.ts: refused once
 * erased), runs one transaction over the modules beside it, then tells the streams and writes keys or sends
 * (scheduler.ts, the alarm's only writer). What crosses RPC is typed in api.ts; the object knows its own
 * person (self.ts).
 */

export class Person extends DurableObject<Env> {
  private readonly db: DrizzleSqliteDODatabase;
  private readonly self: Self;
  private readonly stream: Stream;
  private readonly feed: Feed;
  private readonly push: Push;
  private readonly writer: KeyWriter;
  private readonly jobs: Scheduler;
  private readonly gate: WriteGate;
  /** The contacts' links as the trust index last named them, in memory (links.ts). */
  private readonly links = new KeptLinks();

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    const db = (this.db = drizzle(ctx.storage));
    const self = (this.self = new Self(ctx, env, db));
    const gate = (this.gate = new WriteGate(ctx, self));
    const push = (this.push = new Push({ ctx, env, db, self, openDevices: () => this.stream.openDevices() }));
    this.feed = new Feed({ db, self, gate, push, stream: () => this.stream, care: () => this.jobs.care() });
    const stream = (this.stream = new Stream(ctx, this.feed));
    this.writer = new KeyWriter(db, env.TRUST_INDEX);
    this.jobs = new Scheduler({ ctx, db, self, stream, writer: this.writer });
    void ctx.blockConcurrencyWhile(() => self.open());
  }

  /* ---------- activity (feed.ts) ---------- */

  /** Records an activity this person wrote; a chat to `peer` is stored in both feeds under one id. */
  record(input: api.ActivityInput, peer: number | null) {
    return this.feed.record(input, peer);
  }
  /** The receiving side of a chat from `sender` (feed.ts): its id here and this person's card, or a refusal. */
  acceptChat(row: api.FeedRow, move = false, sender?: api.Sender) {
    return this.self.erased ? GONE : this.feed.accept(row, move, sender);
  }
  /** The feed after `afterId`, oldest first, at most `limit` rows, its parties named as this person may see them. */
  feedAfter(afterId: number, limit: number): Promise<api.FeedView[]> {
    return this.feed.page(afterId, limit);
  }
  /** `GET /me`'s account from the facts (profile.ts), also what another's feed page asks; null: erased, or no account. */
  async ownAccount(): Promise<api.OwnAccount | null> {
    return ownAccount(this.self.id, await this.self.profile());
  }
  /** The newest id in the feed; 0 when it is empty. */
  lastActivityId(): number {
    return this.feed.newest();
  }

  /* ---------- trust requests (requests.ts) ---------- */

  /** `targets` asked: charged (100 a day) and queued in one transaction, delivered after the answer (no timing). */
  async sendTrustRequest(targets: number[], reason: string): Promise<api.Answer> {
    const now = Date.now();
    const asked = (done: api.Answer) => (done.ok ? void (this.jobs.care(), this.jobs.deliverRequests()) : undefined);
    return this.gate.write(GONE, () => requests.ask(this.db, this.self.id, targets, reason, now), asked);
  }
  /** `requesterId` asks this person for trust (at `askedAt`, ms); an erased object takes nothing. */
  receiveTrustRequest(requesterId: number, reason: string, askedAt = Date.now(), card?: api.PeerCard): void {
    const id = this.gate.now(false, () => requests.receive(this.db, this.self.id, requesterId, reason, askedAt, card));
    if (id === false) return; // erased: the late delivery is dropped
    this.push.wake("trust_request", id);
    if (card && id !== null) this.stream.trustRequest(card, reason, new Date(askedAt)); // nothing new, or no names: none
    this.jobs.care();
  }
  /** One page of pending requests, newest first, after `cursor`; `next`: where the next page starts. */
  pendingTrustRequests(page: { cursor: api.RequestCursor | null; limit: number }) {
    return requests.freshPendingPage(this.db, page, (ids) => this.feed.hearFrom(ids));
  }

  /* ---------- contacts (address-book.ts, contacts.ts, docs/contacts-sync.md) ---------- */

  /** A sync: all or nothing, in one transaction; the phones' keys are written before it answers. */
  async saveContacts(inputs: api.ContactInput[]): Promise<api.Answer<api.ContactRead>> {
    await this.self.knowFacts();
    const now = Date.now();
    const changed = (written: api.Answer<api.ContactRead>) => (written.ok ? this.contactsChanged() : undefined);
    return this.gate.write(GONE, () => addressBook.save(this.db, this.self.id, inputs, now), changed);
  }
  /** Deletes contacts (`ids`, or every one), each remembered by a tombstone; answers the ids deleted. */
  async deleteContacts(ids: number[] | "all"): Promise<number[]> {
    await this.self.knowFacts();
    const now = Date.now();
    const changed = (deleted: number[]) => (deleted.length > 0 ? this.contactsChanged(true) : undefined);
    return this.gate.write([], () => addressBook.remove(this.db, ids, now), changed);
  }
  /** A write's effect on the keys: the due ones written (unless the write `changed` nothing). */
  private readonly flush = (changed: unknown = true) => (changed ? this.jobs.makeKeysCurrent() : undefined);
  /** After a change of contacts: the streams hear of it, the keys are written (`care`: the tombstones' alarm). */
  private async contactsChanged(care = false) {
    this.stream.contactsChanged(Date.now());
    if (care) this.jobs.care();
    await this.jobs.makeKeysCurrent();
  }
  /**
   * Contacts of `ids` (those that are here), in that order; every read carries who trusted this person,
   * and the links of their values still fresh here (links.ts).
   */
  contacts(ids: number[]): api.ContactRead {
    return this.withLinks(addressBook.read(this.db, ids));
  }
  /** One page of contacts, oldest id first, optionally changed since `since` (ms), with their fresh links. */
  contactPage(options: { since: number | null; limit: number; offset: number }): api.ContactRead {
    return this.withLinks(addressBook.page(this.db, options));
  }
  /** One page for `GET /contacts`, as the answer's JSON text when this object keeps its links (contact-listing.ts). */
  contactListing(options: api.ContactListingOptions): api.ContactListing {
    return addressBook.listing(this.db, this.self.known(), this.links, options);
  }
  private withLinks(read: api.ContactRead): api.ContactRead {
    return { ...read, links: this.links.of(read.items) };
  }
  /** Links of contact values the Worker read from the trust index at `readAt` (ms), kept for the next pages. */
  keepLinks(links: api.IndexLinks, readAt: number): void {
    if (!this.self.erased) this.links.keep(links, readAt);
  }
  /** The contacts having `e164` among their phones, and who of `among` trusted this person. */
  contactsWithPhone(e164: string, among: number[]): api.ContactRead {
    return addressBook.withPhone(this.db, e164, among);
  }
  /** One page of deletions at or after `since` (ms), oldest first. */
  deletedContacts(options: { since: number; limit: number; offset: number }) {
    return book.deletedPage(this.db, options);
  }

  /* ---------- trust (trust.ts) ---------- */

  /** This person decides about `other` (who asked them, or was decided about): 404 for anyone else. */
  async decideTrust(other: number, trusted: boolean): Promise<api.Answer> {
    await this.self.knowFacts();
    const now = Date.now();
    const sent = (decided: boolean) =>
      decided ? Promise.all([this.jobs.makeKeysCurrent(), this.jobs.sendMirrors()]) : undefined;
    const decided = await this.gate.write(null, () => trust.decide(this.db, other, trusted, now), sent);
    if (decided === null) return GONE;
    return decided ? { ok: true } : { ok: false, status: 404, message: `person ${other} has not asked you for trust` };
  }
  /** Whom this person decided about, and how (`trusted`), for these ids; all when `ids` is left out. */
  decisions(ids?: number[]): { personId: number; trusted: boolean }[] {
    return trust.decisions(this.db, ids);
  }
  /** The mirror: `from` decided about this person at `decidedAt` (ms); a late older decision changes nothing. */
  receiveMirror(from: number, trusted: boolean, decidedAt: number): void {
    this.gate.now(undefined, () => mirror.receiveMirror(this.db, from, trusted, decidedAt));
  }
  /** The people among `ids` who trusted this person; all of them only for tests and the operator. */
  trustedMe(ids?: number[]): number[] {
    return mirror.trustedMe(this.db, ids);
  }
  /** Sets (null: removes) this person's trust in a company; `visible`: D1 found it nameable, else a 404. */
  async setCompanyTrust(companyId: number, setting: api.CompanySetting, visible: boolean): Promise<api.Answer> {
    await this.self.knowFacts();
    const set = () => trust.setCompanyTrust(this.db, companyId, setting, visible);
    const changed = await this.gate.write(GONE, set, this.flush);
    if (changed === null) return { ok: false, status: 404, message: `company ${companyId} does not exist` };
    return changed === GONE ? GONE : { ok: true };
  }
  /** This person's company settings (all, or those of `companyIds`). */
  companySettings(companyIds?: number[]) {
    return trust.companySettings(this.db, companyIds);
  }
  /** Who may ring this person (`everyone` until they choose). */
  callPolicy(): api.CallPolicy {
    return trust.callPolicy(this.db);
  }
  /** Sets who may ring this person; a change rewrites their receiver record. */
  async setCallPolicy(calls: api.CallPolicy): Promise<api.CallPolicy> {
    await this.self.knowFacts();
    await this.gate.write(false, () => trust.setCallPolicy(this.db, calls), this.flush);
    return calls;
  }

  /* ---------- the trust-lookup keys (index-keys.ts, index-writer.ts) ---------- */

  /** D1's facts about this person (their number, their companies) changed: the keys follow. */
  async takeFacts(next: api.Facts): Promise<void> {
    await this.gate.write(undefined, () => keys.takeFacts(this.db, next), this.flush);
  }
  /** The index rebuild: takes D1's facts and writes every key of this person's number. */
  async rewriteKeys(next: api.Facts): Promise<void> {
    await this.gate.write(undefined, () => rewriteAll(this.db, next), this.flush);
  }
  /** A lookup missed this person's keys: the receiver record and the bucket; the keys `missed` written again. */
  async receiverRecords(next: api.Facts, bucket: number | null, missed: string[]) {
    const erased = { receiver: NOBODY as api.ReceiverRecord, bucket: "" };
    return this.gate.write(erased, () => answerMiss(this.db, next, bucket, missed), this.jobs.soon);
  }
  /** The values of this person's keys now, for tests and the operator: key → value. */
  indexValues(): Record<string, string | null> {
    return values(this.db);
  }
  /** What the heartbeat reads here (heartbeat.ts). */
  heartbeatTimes() {
    return heartbeatTimes(this.db);
  }

  /* ---------- blocked calls: listed, and counted past the number's share (blocked.ts) ---------- */

  /** Appends blocked calls, keeping the newest `KEEP.blockedCalls`; counts `unlisted` ones (blocked.ts). */
  recordBlockedCalls(calls: api.BlockedCallRow[], unlisted = 0): void {
    const stored = this.gate.now([], () => blocked.record(this.db, this.ctx.storage, this.self.id, calls, unlisted));
    if (stored.length === 0) return; // erased (no late write), or only counted
    this.push.wake("missed_call", stored.at(-1)?.id ?? null);
    this.jobs.care();
    this.stream.blockedCalls(this.self.id, stored);
  }
  /** The newest `limit` blocked calls, newest first, and those counted, not listed (one RPC for the list). */
  latestBlockedCalls(limit: number) {
    return { rows: blocked.latest(this.db, limit), unlisted: this.unlistedBlockedCalls() };
  }
  unlistedBlockedCalls() {
    return blocked.unlisted(this.ctx.storage, Date.now());
  }

  /* ---------- the whole person ---------- */

  /** Development only: wipes the feed and the blocked calls (the other party keeps its copy of a chat). */
  clearHistory(): void {
    clearFeed(this.db);
    blocked.clear(this.db, this.ctx.storage);
  }
  /**
   * The account is gone: marked erased first (before any await), so every later write is refused; the
   * streams close, a key write under way lands, the keys leave KV, then everything here goes (self.ts).
   * A failure throws, and the sweep erases again.
   */
  async erase(): Promise<void> {
    this.self.markErased();
    this.links.forget();
    this.stream.closeAll();
    await this.jobs.clear();
    await this.writer.settled();
    await keys.deleteAllKeys(this.db, this.env.TRUST_INDEX);
    await this.self.wipe();
  }

  /* ---------- the one-time move from D1 (move.ts; goes with it, docs/move-removal.md) ---------- */

  /** Rows moved in from D1 under their D1 ids (a repeated chunk changes nothing); answers what is held. */
  importRows(rows: api.MovedRows): api.HeldCounts {
    // Erased, or the move finished for this person: what they changed since is theirs, D1's old rows never come back.
    const imported = this.gate.now(false, () => move.importRows(this.db, this.ctx.storage, rows));
    if (imported && move.needsCare(rows)) this.jobs.care();
    return this.counts();
  }
  /** The move of this person's D1 rows finished: later imports change nothing. */
  finishMove(): void {
    move.finish(this.ctx.storage);
  }
  /** How many rows the object holds, per kind, and how many of them came from D1. */
  counts(largest?: Record<api.MarkedKind, number>): api.HeldCounts {
    return move.counts(this.db, this.ctx.storage, largest);
  }

  /* ---------- Idempotency-Key of this person's writes (idempotency.ts) ---------- */

  /** Claims `key` for a request with `fingerprint` (1,000 new keys a day), or answers why not. */
  async claimIdempotencyKey(key: string, fingerprint: string): Promise<api.IdempotencyClaim> {
    const claimed = this.ctx.storage.transactionSync(() => idempotency.claim(this.db, key, fingerprint, Date.now()));
    this.jobs.care();
    return claimed;
  }
  /** Keeps the claim's first answer (charged to today's bytes), or (`answer` null) deletes the claim. */
  async settleIdempotencyKey(key: string, fingerprint: string, answer: api.AnswerToKeep | null): Promise<void> {
    this.ctx.storage.transactionSync(() => idempotency.settle(this.db, key, fingerprint, answer, Date.now()));
  }

  /* ---------- the alarm (scheduler.ts) and live streams (stream.ts, docs/realtime.md) ---------- */

  override async alarm(): Promise<void> {
    await this.jobs.run();
  }
  /** The one HTTP entry of the object: a stream's upgrade, checked and forwarded by the Worker. */
  override async fetch(request: Request): Promise<Response> {
    const params = JSON.parse(new URL(request.url).searchParams.get("connect") ?? "null") as api.ConnectParams;
    const response = devices.upgradeRefusal(this.db, params.tokenId, this.self.erased) ?? this.stream.connect(params);
    await this.jobs.watchStreams(params.until);
    return response;
  }

  override webSocketClose(ws: WebSocket, code: number, reason: string): void {
    this.stream.closed(ws, code, reason);
  }
  /** A resume's records, rendered by the Worker, for the upgrade that follows (stream.ts). */
  stageStream(key: string, backlog: api.Backlog): void {
    this.stream.stage(key, backlog);
  }
  /** An account event (`phones`, `device`, docs/realtime.md) on every open socket. */
  announce(event: api.AccountEvent): void {
    this.stream.announce(event);
  }

  /* ---------- devices (devices.ts): whether a person token still opens this person's requests ---------- */

  /** Checks a token (adopted when new) and records its day's use; an erased person's tokens open nothing. */
  checkDevice(claim: api.DeviceClaim): api.DeviceCheck {
    return this.gate.now(devices.PERSON_GONE, () => devices.check(this.db, claim, Date.now()));
  }
  /** A sign-in's new device. */
  addDevice(claim: api.DeviceClaim): void {
    this.gate.now(undefined, () => devices.add(this.db, claim));
  }
  /** The live devices (`current`: the asking one); null until D1's were adopted once (`fromDirectory`). */
  devices(currentTokenId: number, fromDirectory?: api.DeviceClaim[]) {
    return this.gate.now([], () => devices.list(this.db, this.ctx.storage, currentTokenId, Date.now(), fromDirectory));
  }
  /** Revokes a device: refused here at once, its sockets closed with 4001, its push registration gone. */
  revokeDevice(tokenId: number): number {
    this.gate.now(false, () => devices.revoke(this.db, tokenId, Date.now()));
    this.push.change(tokenId, null);
    return this.stream.closeToken(tokenId);
  }
  /** Where device `deviceId` is woken; null: nowhere (`ifStill`: only while it is that target), push.ts. */
  changePush(deviceId: number, target: api.PushTarget | null, ifStill?: api.PushTarget) {
    return this.push.change(deviceId, target, ifStill);
  }
  /** Remembers a signed ticket's nonce for its one use: made with token `tokenId` (`tokenHash`), until `until`. */
  mintStreamTicket(nonce: string, tokenId: number, tokenHash: string, until: number): void {
    this.stream.mintTicket(nonce, tokenId, tokenHash, until);
  }
  /** Spends a ticket: its token's SHA-256 and expiry, or null (unknown, spent, expired, another token's, revoked). */
  redeemStreamTicket(nonce: string, tokenId: number): { tokenHash: string; expiresAt: number | null } | null {
    const tokenHash = this.stream.redeemTicket(nonce, tokenId);
    const device = tokenHash === null || this.self.erased ? null : devices.live(this.db, tokenId, Date.now());
    return device && { tokenHash: tokenHash!, ...device };
  }
}
