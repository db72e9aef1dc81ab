import { DurableObject } from "cloudflare:workers";

/*
 * The signed requests a provider token has already used (docs/architecture.md,
 * "The replay guard"; docs/security.md, "Provider signatures"). A Telnyx
 * signature is valid for 5 minutes, so a captured request could be sent again
 * within them; the Worker asks this object whether a signed request is new
 * before answering it. One object per provider token and shard (the Worker
 * names it, services/replay-guards.ts), so a token's requests reach the same
 * set from every isolate and location, and calls to one object run one at a
 * time: two copies of one request racing each other meet here, and one loses.
 *
 * The set is a SQLite table in the object's own storage (in the object's
 * process: no round trip beyond the one to the object), each digest kept only
 * until its signature's window has passed. Each call first deletes up to
 * `PRUNE_PER_CALL` expired digests, so the table never holds more than the
 * requests of the last ten minutes however long the token lives; the alarm
 * clears what is left once the traffic stops.
 */

/** Expired digests one call deletes: more than one call adds, so pruning keeps up with any rate. */
const PRUNE_PER_CALL = 64;
/** How long after the last digest's expiry the alarm looks again while digests remain. */
const ALARM_SLACK_MS = 60_000;

export class ReplayGuard extends DurableObject<Env> {
  /** Whether an alarm is known to be set (read from storage once per start). */
  private alarmSet = false;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    ctx.storage.sql.exec(
      "CREATE TABLE IF NOT EXISTS seen (digest TEXT PRIMARY KEY, expires_at INTEGER NOT NULL) WITHOUT ROWID",
    );
    ctx.storage.sql.exec("CREATE INDEX IF NOT EXISTS seen_by_expiry ON seen (expires_at)");
  }

  /**
   * Records the digest of a signed request until `expiresAt` (ms, when its
   * signature stops being accepted anyway). True when it was new: the
   * request's first use; false when it was seen before (a replay).
   */
  async firstUse(digest: string, expiresAt: number): Promise<boolean> {
    this.prune(Date.now(), PRUNE_PER_CALL);
    const inserted = this.ctx.storage.sql
      .exec(
        "INSERT INTO seen (digest, expires_at) VALUES (?, ?) ON CONFLICT (digest) DO NOTHING RETURNING digest",
        digest,
        expiresAt,
      )
      .toArray();
    if (!this.alarmSet) {
      if ((await this.ctx.storage.getAlarm()) === null) await this.ctx.storage.setAlarm(expiresAt + ALARM_SLACK_MS);
      this.alarmSet = true;
    }
    return inserted.length === 1;
  }

  /** Deletes every expired digest; while digests remain, looks again after the next one expires. */
  override async alarm(): Promise<void> {
    const now = Date.now();
    this.prune(now, null);
    const { next } = this.ctx.storage.sql
      .exec<{ next: number | null }>("SELECT min(expires_at) AS next FROM seen")
      .one();
    this.alarmSet = next !== null;
    if (next !== null) await this.ctx.storage.setAlarm(Math.max(next, now) + ALARM_SLACK_MS);
  }

  /** How many digests it holds (tests, and the operator's curiosity). */
  size(): number {
    return this.ctx.storage.sql.exec<{ n: number }>("SELECT count(*) AS n FROM seen").one().n;
  }

  private prune(now: number, limit: number | null) {
    this.ctx.storage.sql.exec(
      limit === null
        ? "DELETE FROM seen WHERE expires_at <= ?"
        : "DELETE FROM seen WHERE digest IN (SELECT digest FROM seen WHERE expires_at <= ? LIMIT ?)",
      ...(limit === null ? [now] : [now, limit]),
    );
  }
}
