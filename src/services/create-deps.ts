import { createDb } from "../db/client";
import type { WriteGuard } from "../db/write-guard";
import { secretBox } from "../lib/secret-box";
import { twimlSettings } from "../lib/twiml";
import type { BackgroundMessage, DeliveryMessage, ScanEventsMessage, TokenUseMessage } from "../domain/queue-messages";
import { codeSettingsOf } from "./code-settings";
import type { Deps } from "./deps";
import { messagingOf } from "./messaging";
import { companyObjectsOf } from "./company-objects";
import { personObjectsOf, type WriteHooks } from "./person-objects";
import { pushSecretsOf } from "./push/secrets";
import { replayGuardsOf } from "./replay-guards";

/*
 * Builds the dependency handle (services/deps.ts). Only the entry points
 * import it: the request middleware (middleware/db.ts), the queue consumers
 * and the cron; no service does, so the services it builds never sit in a
 * loop with it (test/platform/architecture.test.ts).
 */

/**
 * `database`: the binding itself, or a D1 session of it (HTTP requests; see
 * middleware/db.ts). `guard`: a write request's guard, whose `database` is
 * then the one given.
 */
export const createDeps = (env: Env, database: D1Database | D1DatabaseSession = env.DB, guard?: WriteGuard): Deps => {
  const db = createDb(database as D1Database);
  // A write elsewhere than D1 waits for the token check, and counts as the request's write.
  const writes: WriteHooks | undefined = guard && { check: () => guard.finish(), wrote: () => guard.noteWrite() };
  return {
    db,
    kv: writes ? afterCheck(env.TRUST_INDEX, ["put", "delete"], writes) : env.TRUST_INDEX,
    webhookQueue: sends(env.WEBHOOK_QUEUE as Queue<DeliveryMessage>, writes),
    backgroundQueue: sends(env.BACKGROUND_QUEUE as Queue<BackgroundMessage>, writes),
    scanQueue: sends(env.SCAN_QUEUE as Queue<ScanEventsMessage>, writes),
    usesQueue: env.USES_QUEUE as Queue<TokenUseMessage>,
    objects: personObjectsOf(env.PERSON, writes),
    companyObjects: companyObjectsOf(env.COMPANY),
    providerKeys: secretBox("PROVIDER_SECRET_KEYS", env.PROVIDER_SECRET_KEYS),
    replays: replayGuardsOf(env.REPLAY_GUARD),
    environment: env.ENVIRONMENT,
    twiml: twimlSettings(env),
    codes: codeSettingsOf(env, messagingOf(env, db)),
    streamTicketKey: env.STREAM_TICKET_KEY,
    push: pushSecretsOf(env),
    guard,
  };
};

/**
 * A write request's queue: nothing is sent before its pending token check ran (a token verified from
 * the cache is checked again before anything is written, docs/security.md "Tokens"), so a revoked
 * token enqueues no work either. Queue consumers and cron runs have no check. The token-use queue
 * only records that a token was used, and is sent for refused requests too.
 */
const sends = <Q extends Queue<never>>(queue: Q, writes: WriteHooks | undefined): Q =>
  writes ? afterCheck(queue, ["send", "sendBatch"], writes) : queue;

/** `target` whose `methods` first await the token check and count as a write (its other members as they are). */
function afterCheck<T extends object>(target: T, methods: (keyof T & string)[], writes: WriteHooks): T {
  return new Proxy(target, {
    get(object, key) {
      const member = Reflect.get(object, key) as unknown;
      if (typeof member !== "function") return member;
      if (!(methods as string[]).includes(key as string))
        return (member as (...args: unknown[]) => unknown).bind(object);
      return async (...args: unknown[]) => {
        await writes.check();
        writes.wrote();
        return (member as (...args: unknown[]) => unknown).apply(object, args);
      };
    },
  });
}
