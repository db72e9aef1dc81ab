import type { Db } from "../db/client";
import type { WriteGuard } from "../db/write-guard";
import type { SecretBox } from "../lib/secret-box";
import type { TwimlSettings } from "../lib/twiml";
import type { BackgroundMessage, DeliveryMessage, ScanEventsMessage, TokenUseMessage } from "../domain/queue-messages";
import type { CodeSettings } from "./code-settings";
import type { CompanyObjects } from "./company-objects";
import type { PersonObjects } from "./person-objects";
import type { PushSecrets } from "./push/secrets";
import type { ReplayGuards } from "./replay-guards";

/**
 * The one dependency handle: the database, the trust index, the queues that
 * carry work after a commit, the person objects and the environment. HTTP
 * requests (middleware/db.ts), queue consumers and cron runs build it the
 * same way (`createDeps`, services/create-deps.ts); route handlers reach
 * bindings only through it (`c.var.deps`), and services take it whole
 * (docs/architecture.md). This file is the type alone, and imports only types
 * that import it back nowhere: any service can name `Deps` without a loop through the
 * services that build it.
 */
export type Deps = {
  db: Db;
  kv: KVNamespace;
  webhookQueue: Queue<DeliveryMessage>;
  backgroundQueue: Queue<BackgroundMessage>;
  /** The scanner's events on their way to the `scan-events` consumer (services/scans.ts). */
  scanQueue: Queue<ScanEventsMessage>;
  /** Tokens' uses of the day on their way to D1 in batches (`token-uses`, services/tokens.ts). */
  usesQueue: Queue<TokenUseMessage>;
  /** Each person's own Durable Object (services/person-objects.ts). */
  objects: PersonObjects;
  /** Each company's own Durable Object (services/company-objects.ts). */
  companyObjects: CompanyObjects;
  /** Seals and opens provider secrets at rest under `PROVIDER_SECRET_KEYS` (services/provider-secrets.ts). */
  providerKeys: SecretBox;
  /** Whether a provider's signed request is used for the first time (services/replay-guards.ts). */
  replays: ReplayGuards;
  /** `ENVIRONMENT` (wrangler.toml): development allows local webhook endpoints and plain-http publisher pages. */
  environment: Env["ENVIRONMENT"];
  /** How a trust-lookup answered in TwiML puts a trusted call through (`TWIML_*` in wrangler.toml). */
  twiml: TwimlSettings;
  /** One-time codes: their key, limits and the way messages leave (services/codes.ts); the host is the request's. */
  codes: Omit<CodeSettings, "host">;
  /** The Worker secret that signs stream tickets (src/secrets.d.ts); unset, a ticket is a 503 naming it. */
  streamTicketKey: Env["STREAM_TICKET_KEY"];
  /** The push services' credentials (src/secrets.d.ts); a kind whose are unset is skipped (services/push/). */
  push: PushSecrets;
  /**
   * A write request's guard (db/write-guard.ts), which `db` runs on: a token
   * verified from a cache arms it (services/tokens.ts), and a write to a
   * person's object runs it first (`objects.write`). Absent for reads,
   * queue consumers and cron runs.
   */
  guard?: WriteGuard | undefined;
};
