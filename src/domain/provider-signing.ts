/*
 * A provider token's signing configuration (docs/providers.md, "Signed
 * requests"): set by the operator, it makes every request with that token
 * prove it came from the provider. Stored with the token (D1's
 * `access_tokens.signing`) and carried by the verified principal, so the
 * check costs no read of its own. Twilio's auth token is a secret (the full
 * credential of the provider's account): it is stored sealed
 * (lib/secret-box.ts, under the Worker secret `PROVIDER_SECRET_KEYS`) and
 * opened only in the isolate's memory (docs/security.md, "Provider
 * signatures").
 */

export const signingKinds = ["twilio", "telnyx"] as const;

/**
 * What the operator gives, in clear, held only in memory on its way to
 * being sealed. Twilio: the account's auth token (HMAC-SHA1 key). Telnyx:
 * the account's Ed25519 public key, base64.
 */
export type ProviderSigning = { kind: "twilio"; authToken: string } | { kind: "telnyx"; publicKey: string };

/**
 * What D1 stores. `sealed`: the auth token sealed under
 * `PROVIDER_SECRET_KEYS`, bound to the token's id (`sealContext`). A row
 * written before sealing existed still holds `authToken` in clear until the
 * minute cron's `provider-keys` job seals it (services/provider-secrets.ts).
 */
export type StoredSigning =
  { kind: "twilio"; sealed: string } | { kind: "twilio"; authToken: string } | { kind: "telnyx"; publicKey: string };

/**
 * What the principal carries, and so the token's `tok:` record in KV: never
 * an auth token. `sealed: null`: D1 still holds it in clear (not yet sealed),
 * so it is read from D1 where it is needed.
 */
export type SigningRef = { kind: "twilio"; sealed: string | null } | { kind: "telnyx"; publicKey: string };

/**
 * The principal's view of a stored configuration (from D1, or from a `tok:`
 * record an older version wrote): a clear auth token is dropped, whatever
 * the source. Undefined: none.
 */
export function signingRefOf(stored: unknown): SigningRef | undefined {
  if (typeof stored !== "object" || stored === null) return undefined;
  const { kind, sealed, publicKey } = stored as Record<string, unknown>;
  if (kind === "twilio") return { kind, sealed: typeof sealed === "string" ? sealed : null };
  if (kind === "telnyx" && typeof publicKey === "string") return { kind, publicKey };
  return undefined;
}

/** The context a token's sealed auth token is bound to: it opens only as that token's. */
export const sealContext = (tokenId: number) => `access_tokens.signing:${tokenId}`;

/**
 * Whether a token's requests are read from their signed body alone: Telnyx
 * signs `timestamp|body` and not the URL, so for a Telnyx-signed token the
 * query string is not part of the question, and a GET (which has no body)
 * is refused (docs/providers.md, "Signed requests"). Twilio signs the URL
 * with its query string, so its requests are read as they come.
 */
export const signsBodyOnly = (signing: { kind: (typeof signingKinds)[number] } | undefined) =>
  signing?.kind === "telnyx";
