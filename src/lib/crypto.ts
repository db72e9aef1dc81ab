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

/** Unpadded base64url (padded and standard base64 too) as bytes; null when it is not base64. */
export function fromBase64url(text: string): Uint8Array | null {
  if (!/^[A-Za-z0-9+/_-]*={0,2}$/.test(text)) return null;
  const normal = text.replace(/-/g, "+").replace(/_/g, "/").replace(/=+$/, "");
  try {
    return Uint8Array.from(atob(normal.padEnd(Math.ceil(normal.length / 4) * 4, "=")), (c) => c.charCodeAt(0));
  } catch {
    return null;
  }
}
