import { createDb } from "../db/client";
import type { WriteGuard } from "../db/write-guard";
import { secretBox } from "../lib/secret-box";
import { twimlSettings } from "../lib/twiml";
import type { BackgroundMessage, DeliveryMessage, ScanEventsMessage, TokenUseMessage } from "../domain/queue-messages";
import { codeSettingsOf } from "./code-settings";
import type { Deps } from "./deps";
import { messagingOf } from "./messaging";
import { companyObjectsOf } from "./company-objects";
import { personObjectsOf } from "./person-objects";
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
  return {
    db,
    kv: env.TRUST_INDEX,
    webhookQueue: env.WEBHOOK_QUEUE as Queue<DeliveryMessage>,
    backgroundQueue: env.BACKGROUND_QUEUE as Queue<BackgroundMessage>,
    scanQueue: env.SCAN_QUEUE as Queue<ScanEventsMessage>,
    usesQueue: env.USES_QUEUE as Queue<TokenUseMessage>,
    objects: personObjectsOf(env.PERSON, guard && (() => guard.finish())),
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
