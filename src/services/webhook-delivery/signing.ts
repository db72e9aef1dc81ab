import { SECRET_PREFIX } from "../webhooks";

/**
 * Signing a delivery, following the Standard Webhooks specification
 * (https://www.standardwebhooks.com/; docs/webhooks.md, "Verifying").
 */

const decodeBase64 = (value: string) => Uint8Array.from(atob(value), (char) => char.charCodeAt(0));
const encodeBase64 = (bytes: ArrayBuffer) => btoa(String.fromCharCode(...new Uint8Array(bytes)));

/** `v1,` + base64 HMAC-SHA256 of `{id}.{timestamp}.{body}`, keyed with the secret's decoded bytes. */
export async function signature(secret: string, id: string, timestamp: number, body: string): Promise<string> {
  const raw = secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret;
  const key = await crypto.subtle.importKey("raw", decodeBase64(raw), { name: "HMAC", hash: "SHA-256" }, false, [
    "sign",
  ]);
  const mac = await crypto.subtle.sign("HMAC", key, new TextEncoder().encode(`${id}.${timestamp}.${body}`));
  return `v1,${encodeBase64(mac)}`;
}

type Signing = { secret: string; previousSecret: string | null; previousSecretExpiresAt: Date | null };

/**
 * `webhook-signature`: the current secret's signature, then, for 24 h after a
 * rotation, the previous secret's, space-separated (a receiver accepts any).
 */
export async function signatureHeader(keys: Signing, id: string, timestamp: number, body: string, now: Date) {
  const secrets = [keys.secret];
  if (keys.previousSecret && keys.previousSecretExpiresAt && keys.previousSecretExpiresAt > now) {
    secrets.push(keys.previousSecret);
  }
  const signatures = await Promise.all(secrets.map((secret) => signature(secret, id, timestamp, body)));
  return signatures.join(" ");
}
