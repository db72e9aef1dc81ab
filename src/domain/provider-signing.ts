/*
 * A provider token's signing configuration (docs/providers.md, "Signed
 * requests"): set by the operator, it makes every request with that token
 * prove it came from the provider. Stored with the token (D1's
 * `access_tokens.signing`) and carried by the verified principal, so the
 * check costs no read of its own.
 */

export const signingKinds = ["twilio", "telnyx"] as const;

/** Twilio: the account's auth token (HMAC-SHA1 key). Telnyx: the account's Ed25519 public key, base64. */
export type ProviderSigning = { kind: "twilio"; authToken: string } | { kind: "telnyx"; publicKey: string };

/**
 * Whether a token's requests are read from their signed body alone: Telnyx
 * signs `timestamp|body` and not the URL, so for a Telnyx-signed token the
 * query string is not part of the question, and a GET (which has no body)
 * is refused (docs/providers.md, "Signed requests"). Twilio signs the URL
 * with its query string, so its requests are read as they come.
 */
export const signsBodyOnly = (signing: { kind: (typeof signingKinds)[number] } | undefined) =>
  signing?.kind === "telnyx";
