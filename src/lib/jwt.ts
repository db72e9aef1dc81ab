import { base64url, fromBase64url } from "./crypto";

/*
 * JSON Web Tokens signed with Web Crypto (RFC 7515, 7519), for the push
 * services (docs/app.md, "Push"): ES256 for VAPID (RFC 8292) and APNs'
 * provider token, RS256 for the Google service account's OAuth assertion.
 * Web Crypto's ECDSA signature is already JWS's form (r ‖ s, 64 bytes).
 */

export type JwtAlgorithm = "ES256" | "RS256";

const SIGNING: Record<JwtAlgorithm, SubtleCryptoSignAlgorithm> = {
  ES256: { name: "ECDSA", hash: "SHA-256" },
  RS256: { name: "RSASSA-PKCS1-v1_5" },
};

const utf8 = (text: string) => new TextEncoder().encode(text);

/** `header.claims.signature`, each part base64url; `header.alg` is `algorithm`'s. */
export async function signJwt(
  algorithm: JwtAlgorithm,
  key: CryptoKey,
  claims: Record<string, unknown>,
  header: Record<string, string> = {},
): Promise<string> {
  const encode = (value: unknown) => base64url(utf8(JSON.stringify(value)));
  const input = `${encode({ typ: "JWT", alg: algorithm, ...header })}.${encode(claims)}`;
  const signature = new Uint8Array(await crypto.subtle.sign(SIGNING[algorithm], key, utf8(input)));
  return `${input}.${base64url(signature)}`;
}

/** The DER bytes of a PEM block (`-----BEGIN PRIVATE KEY-----` …); null when there is none. */
export function pemBytes(pem: string): Uint8Array | null {
  const body = /-----BEGIN [A-Z ]+-----([\s\S]+?)-----END [A-Z ]+-----/.exec(pem.replace(/\\n/g, "\n"))?.[1];
  if (!body) return null;
  try {
    return fromBase64url(body.replace(/\s+/g, "").replace(/=+$/, ""));
  } catch {
    return null;
  }
}

/** A PKCS #8 private key (PEM) for signing with `algorithm`. Throws when it is not one. */
export function importPkcs8(algorithm: JwtAlgorithm, pem: string): Promise<CryptoKey> {
  const der = pemBytes(pem);
  if (!der) return Promise.reject(new TypeError("not a PEM private key"));
  const params =
    algorithm === "ES256" ? { name: "ECDSA", namedCurve: "P-256" } : { name: "RSASSA-PKCS1-v1_5", hash: "SHA-256" };
  return crypto.subtle.importKey("pkcs8", der, params, false, ["sign"]);
}

/** Seconds since the epoch, as JWT claims count time. */
export const epochSeconds = (ms = Date.now()) => Math.floor(ms / 1000);
