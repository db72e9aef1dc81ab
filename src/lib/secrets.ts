import { fromBase64url } from "./crypto";
import { serviceUnavailable } from "./errors";

/*
 * The Worker's secrets that are keys (src/secrets.d.ts; docs/security.md,
 * "Secrets"): base64url (or base64) of at least 32 random bytes. One that is
 * missing or too short where it is needed answers 503 naming it, never a
 * fallback key.
 */

const MIN_KEY_BYTES = 32;

/** The bytes of the key secret `name` (its value `value`), or the 503 that names it. */
export function keyOfSecret(name: string, value: string | undefined): Uint8Array {
  if (!value) {
    throw serviceUnavailable(`the Worker secret ${name} is not set: set it with \`wrangler secret put ${name}\``);
  }
  const bytes = decoded(value.trim());
  if (!bytes || bytes.length < MIN_KEY_BYTES) {
    throw serviceUnavailable(
      `the Worker secret ${name} must be base64url of at least ${MIN_KEY_BYTES} random bytes (e.g. \`openssl rand -base64 32\`)`,
    );
  }
  return bytes;
}

function decoded(text: string): Uint8Array | null {
  try {
    return fromBase64url(text);
  } catch {
    return null;
  }
}
