import { eq } from "drizzle-orm";
import type { DrizzleSqliteDODatabase } from "drizzle-orm/durable-sqlite";
import { targetKey, type PushJob, type PushRegistration, type PushTarget, type PushType } from "../../domain/push";
import { SEND_BATCH_MAX } from "../../domain/queue-messages";
import { logError } from "../../lib/log";
import * as devices from "./devices";
import { pushRegistrations } from "./schema";
import type { Self } from "./self";

/*
 * Push (docs/app.md, "Push"): where the person's devices are woken, and the
 * waking. The object is where a chat, a trust request or a missed call
 * arrives, and it knows which devices have an open stream (their sockets'
 * attachments name their tokens), so it decides here, with no D1 read and no
 * await: every registered device without an open socket gets one push job
 * on the `background` queue, sent after the method answered (the queue's
 * consumer sends it, services/push/). The request that brought the event
 * pays one read of this table and nothing else.
 */

export type PushHost = {
  ctx: DurableObjectState;
  env: Env;
  db: DrizzleSqliteDODatabase;
  self: Self;
  /** The devices (token ids) with an open stream now. */
  openDevices(): Set<number>;
};

export class Push {
  constructor(private readonly host: PushHost) {}

  /**
   * Registers `target` for device `deviceId` (replacing its registration), or with null removes it;
   * `ifStill` removes it only while it is still that target (a push service's 404 or 410 about an
   * old one leaves a newer registration alone). Answers the registration now.
   */
  change(deviceId: number, target: PushTarget | null, ifStill?: PushTarget): PushRegistration | null {
    const { db, self } = this.host;
    if (self.erased) return null;
    if (target) {
      // A device revoked (or expired) since the request's check is woken nowhere.
      if (devices.refused(db, deviceId, Date.now())) return null;
      const row = { deviceId, kind: target.kind, target, updatedAt: Date.now() };
      db.insert(pushRegistrations)
        .values(row)
        .onConflictDoUpdate({ target: pushRegistrations.deviceId, set: row })
        .run();
      return { deviceId, target, updatedAt: row.updatedAt };
    }
    const current = db.select().from(pushRegistrations).where(eq(pushRegistrations.deviceId, deviceId)).get();
    if (current && (!ifStill || targetKey(current.target) === targetKey(ifStill))) {
      db.delete(pushRegistrations).where(eq(pushRegistrations.deviceId, deviceId)).run();
      return null;
    }
    return current ? { deviceId, target: current.target, updatedAt: current.updatedAt } : null;
  }

  /**
   * `type` `id` arrived for the person (null: nothing new, a repeat): each registered device with
   * no open stream gets a push job. Never awaited by the caller; a refused enqueue is tried once
   * more, then logged and dropped (what arrived is in the person's records all the same).
   */
  wake(type: PushType, id: number | null | undefined): void {
    if (id === null || id === undefined || this.host.self.erased) return;
    const open = this.host.openDevices();
    const registered = this.host.db.select().from(pushRegistrations).all();
    const ended = devices.refusedAmong(
      this.host.db,
      registered.map((row) => row.deviceId),
      Date.now(),
    );
    const asleep = registered.filter((row) => !open.has(row.deviceId) && !ended.has(row.deviceId));
    if (asleep.length === 0) return;
    const personId = this.host.self.id;
    const at = Date.now();
    const jobs = asleep.map((row) => ({
      body: {
        kind: "push",
        personId,
        deviceId: row.deviceId,
        target: row.target,
        event: { type, id },
        at,
      } satisfies PushJob,
    }));
    const queue = this.host.env.BACKGROUND_QUEUE;
    for (let i = 0; i < jobs.length; i += SEND_BATCH_MAX) {
      const chunk = jobs.slice(i, i + SEND_BATCH_MAX);
      this.host.ctx.waitUntil(
        queue
          .sendBatch(chunk)
          .catch(() => queue.sendBatch(chunk))
          .catch((err: unknown) => logError("queueing a push failed; it is dropped", err, { personId, type })),
      );
    }
  }
}
