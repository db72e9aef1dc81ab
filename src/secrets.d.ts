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
  /*
   * Push (docs/app.md, "Push"). A kind whose secrets are unset is not sent: each push of it is skipped
   * and logged, naming what is missing. `npm run admin -- push-keys` prints a VAPID pair.
   */
  /** Web Push: the VAPID public key, base64url of the uncompressed P-256 point (what browsers subscribe with). */
  VAPID_PUBLIC_KEY?: string;
  /** Web Push: the VAPID private key, base64url of the 32-byte P-256 scalar. */
  VAPID_PRIVATE_KEY?: string;
  /** Web Push: whom push services contact, `mailto:ops@example.com` or an https URL (RFC 8292). */
  VAPID_SUBJECT?: string;
  /** FCM HTTP v1: the service account's JSON key file, whole (project_id, client_email, private_key). */
  FCM_SERVICE_ACCOUNT?: string;
  /** APNs: the token signing key, the `.p8` file's PEM text (PKCS #8, P-256). */
  APNS_KEY?: string;
  /** APNs: the signing key's 10-character key id. */
  APNS_KEY_ID?: string;
  /** APNs: the developer team id (10 characters). */
  APNS_TEAM_ID?: string;
}
