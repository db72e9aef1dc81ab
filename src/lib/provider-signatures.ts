/*
 * The telephony providers' request signatures, checked with Web Crypto
 * (docs/providers.md, "Signed requests"). Pure: the caller hands over the
 * request's URL, headers and raw body, and the secret it configured.
 */

const encoder = new TextEncoder();

/** Constant-time comparison of two byte strings (different lengths: false at once). */
function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.byteLength !== b.byteLength) return false;
  return crypto.subtle.timingSafeEqual(a, b);
}

const base64ToBytes = (value: string): Uint8Array | null => {
  try {
    const normal = value.trim().replace(/-/g, "+").replace(/_/g, "/");
    return Uint8Array.from(atob(normal.padEnd(Math.ceil(normal.length / 4) * 4, "=")), (c) => c.charCodeAt(0));
  } catch {
    return null;
  }
};

const bytesToBase64 = (bytes: Uint8Array) => btoa(String.fromCharCode(...bytes));

const hex = (bytes: ArrayBuffer) => [...new Uint8Array(bytes)].map((b) => b.toString(16).padStart(2, "0")).join("");

/* ---------- Twilio: X-Twilio-Signature ---------- */

/**
 * Twilio's signature of a request: base64 HMAC-SHA1, keyed with the
 * account's auth token, over the URL followed by each form field's name and
 * value, names sorted (a repeated name: its distinct values sorted, each
 * with the name). A JSON or GET request signs the URL alone.
 */
export async function twilioSignature(
  authToken: string,
  url: string,
  params: Map<string, string[]> = new Map(),
): Promise<string> {
  const data = url + twilioSignedFields(params);
  const key = await crypto.subtle.importKey("raw", encoder.encode(authToken), { name: "HMAC", hash: "SHA-1" }, false, [
    "sign",
  ]);
  return bytesToBase64(new Uint8Array(await crypto.subtle.sign("HMAC", key, encoder.encode(data))));
}

/**
 * What Twilio's signature covers of a form after the URL: each field's name and value run together,
 * names sorted (a repeated name: its distinct values sorted, each with the name). The same text can
 * be cut into other fields with the same signature (middleware/provider-signature.ts).
 */
export function twilioSignedFields(params: Map<string, string[]>): string {
  let data = "";
  for (const name of [...params.keys()].sort()) {
    for (const value of [...new Set(params.get(name))].sort()) data += name + value;
  }
  return data;
}

/** Whether a request's `Content-Type` is a form's, whose fields Twilio signs. */
export const isFormType = (contentType: string) => /^application\/x-www-form-urlencoded/i.test(contentType);

/** A form body's fields, each name with all its values in order. */
export function formFields(body: Uint8Array | string): Map<string, string[]> {
  const params = new Map<string, string[]>();
  const text = typeof body === "string" ? body : new TextDecoder().decode(body);
  for (const [name, value] of new URLSearchParams(text)) params.set(name, [...(params.get(name) ?? []), value]);
  return params;
}

/**
 * The URLs Twilio may have signed for the URL this request arrived at: as
 * received, with and without the scheme's default port (like Twilio's own
 * validator), and each with the Basic credentials the request carried in
 * the URL's user part (a voice URL written `https://user:token@host/…`).
 */
function signedUrlCandidates(url: string, basic: { user: string; password: string } | null): string[] {
  const parsed = new URL(url);
  const defaultPort = parsed.protocol === "https:" ? "443" : "80";
  const hosts = parsed.port ? [parsed.host, parsed.hostname] : [parsed.host, `${parsed.hostname}:${defaultPort}`];
  if (parsed.port === defaultPort) hosts.push(parsed.hostname);
  const rest = url.slice(url.indexOf("/", parsed.protocol.length + 2));
  const users = [""];
  if (basic) users.push(`${encodeURIComponent(basic.user)}:${encodeURIComponent(basic.password)}@`);
  return [...new Set(users.flatMap((user) => hosts.map((host) => `${parsed.protocol}//${user}${host}${rest}`)))];
}

export type TwilioRequest = {
  url: string;
  contentType: string;
  body: Uint8Array;
  signature: string | undefined;
  basic: { user: string; password: string } | null;
};

/**
 * Whether a request carries Twilio's valid signature for `authToken`. A form
 * POST signs its fields; any other request signs the URL alone, and a
 * non-empty body must match the URL's `bodySHA256` (hex SHA-256 of the body,
 * Twilio's rule for JSON).
 */
export async function verifyTwilio(authToken: string, request: TwilioRequest): Promise<boolean> {
  if (!request.signature) return false;
  const given = encoder.encode(request.signature.trim());
  const isForm = isFormType(request.contentType);
  const params = isForm ? formFields(request.body) : new Map<string, string[]>();
  if (!isForm && request.body.byteLength > 0) {
    const declared = new URL(request.url).searchParams.get("bodySHA256") ?? "";
    const actual = hex(await crypto.subtle.digest("SHA-256", request.body));
    if (!sameBytes(encoder.encode(declared.toLowerCase()), encoder.encode(actual))) return false;
  }
  for (const url of signedUrlCandidates(request.url, request.basic)) {
    if (sameBytes(given, encoder.encode(await twilioSignature(authToken, url, params)))) return true;
  }
  return false;
}

/* ---------- Telnyx: telnyx-signature-ed25519 ---------- */

/** How far a Telnyx timestamp may be from now, either way. */
export const TELNYX_TOLERANCE_SECONDS = 300;

/** A Telnyx public key as the portal shows it (base64 of the 32-byte Ed25519 key), or null when it is not one. */
export async function telnyxKey(publicKey: string): Promise<CryptoKey | null> {
  const bytes = base64ToBytes(publicKey);
  if (!bytes || bytes.byteLength !== 32) return null;
  try {
    return await crypto.subtle.importKey("raw", bytes, { name: "Ed25519" }, false, ["verify"]);
  } catch {
    return null;
  }
}

export type TelnyxRequest = {
  body: Uint8Array;
  signature: string | undefined;
  timestamp: string | undefined;
  nowSeconds: number;
};

/**
 * Whether a request carries Telnyx's valid signature: Ed25519 over
 * `<telnyx-timestamp>|<raw body>`, the timestamp (Unix seconds) within five
 * minutes of now.
 */
export async function verifyTelnyx(publicKey: string, request: TelnyxRequest): Promise<boolean> {
  if (!request.signature || !request.timestamp || !/^\d{1,12}$/.test(request.timestamp.trim())) return false;
  const timestamp = request.timestamp.trim();
  if (Math.abs(request.nowSeconds - Number(timestamp)) > TELNYX_TOLERANCE_SECONDS) return false;
  const signature = base64ToBytes(request.signature);
  const key = await telnyxKey(publicKey);
  if (!signature || signature.byteLength !== 64 || !key) return false;
  return crypto.subtle.verify({ name: "Ed25519" }, key, signature, telnyxSignedBytes(timestamp, request.body));
}

/** What Telnyx signs: `<telnyx-timestamp>|<raw body>`. */
export function telnyxSignedBytes(timestamp: string, body: Uint8Array): Uint8Array {
  const prefix = encoder.encode(`${timestamp.trim()}|`);
  const signed = new Uint8Array(prefix.byteLength + body.byteLength);
  signed.set(prefix);
  signed.set(body, prefix.byteLength);
  return signed;
}
