import { serviceUnavailable } from "./errors";
import { base64url, fromBase64url } from "./crypto";

/*
 * Secrets kept at rest under a Worker secret (docs/security.md, "Secrets"):
 * AES-256-GCM with Web Crypto, each key named by an id so the secret can
 * rotate. The Worker secret lists `kid:base64url` pairs separated by commas
 * (each key at least 32 random bytes); the first seals, every one opens. A
 * sealed value is `v1.<kid>.<iv>.<ciphertext>` (base64url), its ciphertext
 * bound to a context (what the value belongs to, as AES-GCM's additional
 * data), so a sealed value copied to another row does not open there. The
 * AES key is derived from the listed bytes with HKDF-SHA-256. A missing or
 * malformed secret, or a key id it no longer lists, is a 503 naming the
 * secret, never a fallback.
 */

export type SecretBox = {
  /** The id of the key that seals (the first listed). */
  sealingKeyId(): string;
  /** The ids of every listed key (each opens), the sealing one first. */
  keyIds(): string[];
  /** `plaintext` sealed under the first key, bound to `context`. */
  seal(plaintext: string, context: string): Promise<string>;
  /** The plaintext of a value `seal` made with the same `context`. */
  open(sealed: string, context: string): Promise<string>;
  /** Whether `sealed` is sealed under the key that seals now (false: rotation should seal it again). */
  isCurrent(sealed: string): boolean;
};

/** The prefix of every value sealed under `kid`: `v1.<kid>.`. */
export const sealedPrefix = (kid: string) => `v1.${kid}.`;

type Keyring = { ids: string[]; keys: Map<string, Promise<CryptoKey>> };

const KID = /^[A-Za-z0-9_-]{1,32}$/;
/** Bytes of base64url text; null when it is not base64url. */
function bytesOf(text: string): Uint8Array | null {
  if (!/^[A-Za-z0-9_-]*={0,2}$/.test(text)) return null;
  try {
    return fromBase64url(text);
  } catch {
    return null;
  }
}
const MIN_KEY_BYTES = 32;
const encoder = new TextEncoder();
/** Parsed keyrings by the secret's text: parsed and derived once per isolate. */
const keyrings = new Map<string, Keyring>();

function keyringOf(name: string, value: string | undefined): Keyring {
  if (!value?.trim())
    throw serviceUnavailable(
      `${name} is not set: the Worker cannot seal or open the secrets kept under it ` +
        "(set it with `wrangler secret put " +
        name +
        "`, `kid:base64url` pairs, docs/security.md)",
    );
  const known = keyrings.get(value);
  if (known) return known;
  const ids: string[] = [];
  const keys = new Map<string, Promise<CryptoKey>>();
  for (const entry of value.split(",")) {
    const [kid, secret, extra] = entry.trim().split(":");
    const bytes = secret === undefined ? null : bytesOf(secret);
    if (!kid || !KID.test(kid) || extra !== undefined || !bytes || bytes.byteLength < MIN_KEY_BYTES || keys.has(kid))
      throw serviceUnavailable(
        `${name} is malformed: it must be \`kid:base64url\` pairs separated by commas, each key id ` +
          `1–32 letters, digits, \`_\` or \`-\` and listed once, each key at least ${MIN_KEY_BYTES} bytes`,
      );
    ids.push(kid);
    keys.set(kid, deriveKey(bytes));
  }
  const keyring = { ids, keys };
  if (keyrings.size > 8) keyrings.clear();
  keyrings.set(value, keyring);
  return keyring;
}

async function deriveKey(bytes: Uint8Array): Promise<CryptoKey> {
  const material = await crypto.subtle.importKey("raw", bytes, "HKDF", false, ["deriveKey"]);
  return crypto.subtle.deriveKey(
    { name: "HKDF", hash: "SHA-256", salt: new Uint8Array(0), info: encoder.encode("secret-box v1 aes-256-gcm") },
    material,
    { name: "AES-GCM", length: 256 },
    false,
    ["encrypt", "decrypt"],
  );
}

/**
 * The box of the Worker secret `name` whose text is `value` (undefined: not
 * set). Nothing is parsed until it is used, so a Worker without the secret
 * fails only where it is needed.
 */
export function secretBox(name: string, value: string | undefined): SecretBox {
  const keyring = () => keyringOf(name, value);
  return {
    sealingKeyId: () => keyring().ids[0]!,
    keyIds: () => [...keyring().ids],
    isCurrent: (sealed) => sealed.startsWith(sealedPrefix(keyring().ids[0]!)),
    async seal(plaintext, context) {
      const { ids, keys } = keyring();
      const kid = ids[0]!;
      const iv = crypto.getRandomValues(new Uint8Array(12));
      const ciphertext = await crypto.subtle.encrypt(
        { name: "AES-GCM", iv, additionalData: encoder.encode(context) },
        await keys.get(kid)!,
        encoder.encode(plaintext),
      );
      return `${sealedPrefix(kid)}${base64url(iv)}.${base64url(new Uint8Array(ciphertext))}`;
    },
    async open(sealed, context) {
      const [version, kid, iv, ciphertext, extra] = sealed.split(".");
      const ivBytes = iv === undefined ? null : bytesOf(iv);
      const cipherBytes = ciphertext === undefined ? null : bytesOf(ciphertext);
      if (version !== "v1" || !kid || !ivBytes || ivBytes.byteLength !== 12 || !cipherBytes || extra !== undefined)
        throw serviceUnavailable(`a value sealed under ${name} is not one this version reads`);
      const key = keyring().keys.get(kid);
      if (!key)
        throw serviceUnavailable(
          `${name} has no key \`${kid}\`, which sealed a stored secret: list it again (after the new key) ` +
            "until the rotation has sealed everything under the new one",
        );
      try {
        const plaintext = await crypto.subtle.decrypt(
          { name: "AES-GCM", iv: ivBytes, additionalData: encoder.encode(context) },
          await key,
          cipherBytes,
        );
        return new TextDecoder().decode(plaintext);
      } catch {
        throw serviceUnavailable(
          `a secret sealed under ${name}'s key \`${kid}\` does not open: the key listed under that id is ` +
            "not the one that sealed it",
        );
      }
    },
  };
}
