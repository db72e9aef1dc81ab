/** SHA-256 of a string as lowercase hex, with Web Crypto. */
export async function sha256Hex(input: string): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(input));
  return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

/** Bytes as unpadded base64url (RFC 4648 §5): how random tokens are written. */
export function base64url(bytes: Uint8Array): string {
  return btoa(String.fromCharCode(...bytes))
    .replace(/\+/g, "-")
    .replace(/\//g, "_")
    .replace(/=+$/, "");
}

/** Unpadded (or padded) base64url back to bytes. */
export function fromBase64url(text: string): Uint8Array {
  return Uint8Array.from(atob(text.replace(/-/g, "+").replace(/_/g, "/")), (c) => c.charCodeAt(0));
}

/** An HMAC-SHA-256 key of these bytes, for signing and verifying only. */
export const hmacKey = (raw: Uint8Array): Promise<CryptoKey> =>
  crypto.subtle.importKey("raw", raw, { name: "HMAC", hash: "SHA-256" }, false, ["sign", "verify"]);

/** HMAC-SHA-256 of `text` under `key`, as base64url. */
export async function hmacSign(key: CryptoKey, text: string): Promise<string> {
  return base64url(new Uint8Array(await crypto.subtle.sign("HMAC", key, new TextEncoder().encode(text))));
}

/**
 * Whether `mac` (base64url, checked by the caller) is `text`'s HMAC-SHA-256
 * under `key`: Web Crypto compares in constant time.
 */
export async function hmacVerify(key: CryptoKey, text: string, mac: string): Promise<boolean> {
  return crypto.subtle.verify("HMAC", key, fromBase64url(mac), new TextEncoder().encode(text));
}
