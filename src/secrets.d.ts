/*
 * The Worker's secrets (docs/security.md, "Secrets"). They are not in wrangler.toml, so `wrangler types`
 * does not list them: this file adds them to `Env`. In production each is set with
 * `wrangler secret put <NAME> --env production`; under `npm run dev` scripts/dev.mjs generates the keys
 * into .wrangler/dev-secrets.env (and reads provider credentials from .dev.vars, see .dev.vars.example);
 * the tests set them in test/vitest.config.ts. A secret that is missing where it is needed is a 503
 * naming it, never a fallback key.
 */
interface __BaseEnv_Env {
  /** HMAC-SHA-256 key of one-time codes at rest (base64url, ≥ 32 bytes). */
  CODE_KEY?: string;
  /** HMAC-SHA-256 key that signs stream tickets (base64url, ≥ 32 bytes). */
  STREAM_TICKET_KEY?: string;
  /**
   * AES-GCM keys that encrypt provider credentials at rest: `kid:base64url` pairs separated by commas,
   * the first encrypts, every one decrypts (rotation: put the new key first, run the rotation command).
   */
  PROVIDER_SECRET_KEYS?: string;
  /** `twilio` or `telnyx`: which messaging API sends codes by SMS; unset: the development outbox. */
  SMS_PROVIDER?: string;
  TWILIO_ACCOUNT_SID?: string;
  TWILIO_AUTH_TOKEN?: string;
  /** The sender: an E.164 number or a Messaging Service SID (`MG…`). */
  TWILIO_FROM?: string;
  TELNYX_API_KEY?: string;
  /** The sender: an E.164 number of the Telnyx account. */
  TELNYX_FROM?: string;
  /** Calling codes SMS codes may go to, comma-separated ("1,44"); unset: those of the secure-number pool. */
  SMS_COUNTRIES?: string;
  /** SMS codes a day to one country (default 1,000). */
  SMS_DAILY_CAP?: string;
  /** The sender of code emails (Cloudflare Email Service); unset: the development outbox. */
  EMAIL_FROM?: string;
}
