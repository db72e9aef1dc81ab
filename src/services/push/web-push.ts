import { PUSH_TTL_SECONDS, type PushEvent } from "../../domain/push";
import { base64url, fromBase64url } from "../../lib/crypto";
import { epochSeconds, signJwt } from "../../lib/jwt";
import { SEND_TIMEOUT_MS, sendAndClassify, type PushOutcome, type WebPushTarget } from "./outcome";

/*
 * Web Push (docs/app.md, "Push"), with Web Crypto only: the message of RFC 8030, its payload
 * encrypted for the browser per RFC 8291 (`aes128gcm`, RFC 8188: ECDH P-256, HKDF-SHA-256,
 * AES-128-GCM, one record), the sender identified per RFC 8292 (VAPID: an ES256 JWT in
 * `Authorization: vapid t=…, k=…`).
 */

/** The deployment's VAPID key pair and contact (Worker secrets: src/secrets.d.ts). */
export type VapidKeys = {
  /** The public key: base64url of the uncompressed P-256 point (65 bytes), what browsers subscribe with. */
  publicKey: string;
  /** The private key: base64url of the 32-byte scalar. */
  privateKey: string;
  /** `mailto:` or `https:`: whom a push service contacts about these pushes. */
  subject: string;
};

/** The record size written in the header: the one record is far smaller. */
const RECORD_SIZE = 4096;
/** Every payload is padded to this many bytes before the tag, so its length tells nothing (RFC 8291 §4). */
const PADDED_LENGTH = 64;
/** A VAPID token is valid 12 hours (RFC 8292 allows 24) and used for at most one. */
const VAPID_VALID_S = 12 * 60 * 60;
const VAPID_REUSE_MS = 60 * 60 * 1000;

const utf8 = (text: string) => new TextEncoder().encode(text);
const concat = (...parts: Uint8Array[]) => {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const part of parts) {
    out.set(part, at);
    at += part.length;
  }
  return out;
};

async function hkdf(salt: Uint8Array, ikm: Uint8Array, info: Uint8Array, bytes: number): Promise<Uint8Array> {
  const key = await crypto.subtle.importKey("raw", ikm, "HKDF", false, ["deriveBits"]);
  return new Uint8Array(await crypto.subtle.deriveBits({ name: "HKDF", hash: "SHA-256", salt, info }, key, bytes * 8));
}

/** The application server's one-time ECDH key pair for one message, and its public key (65 bytes). */
export type ServerKeys = { privateKey: CryptoKey; publicKey: Uint8Array };

async function freshServerKeys(): Promise<ServerKeys> {
  const pair = (await crypto.subtle.generateKey({ name: "ECDH", namedCurve: "P-256" }, true, [
    "deriveBits",
  ])) as CryptoKeyPair;
  return {
    privateKey: pair.privateKey,
    publicKey: new Uint8Array((await crypto.subtle.exportKey("raw", pair.publicKey)) as ArrayBuffer),
  };
}

/**
 * The `aes128gcm` body of `plaintext` for a subscription's keys (RFC 8291 §3.4): a fresh salt
 * and server key pair unless given (`fixed`: the RFC's test vector), padded to `padTo` bytes.
 */
export async function encryptPayload(
  plaintext: Uint8Array,
  keys: { p256dh: string; auth: string },
  fixed?: { salt: Uint8Array; server: ServerKeys },
  padTo = PADDED_LENGTH,
): Promise<Uint8Array> {
  const uaPublic = fromBase64url(keys.p256dh);
  const authSecret = fromBase64url(keys.auth);
  const uaKey = await crypto.subtle.importKey("raw", uaPublic, { name: "ECDH", namedCurve: "P-256" }, false, []);
  const server = fixed?.server ?? (await freshServerKeys());
  const salt = fixed?.salt ?? crypto.getRandomValues(new Uint8Array(16));
  // Web Crypto's parameter is `public` (the types here spell it `$public`).
  const ecdh = { name: "ECDH", public: uaKey } as unknown as SubtleCryptoDeriveKeyAlgorithm;
  const shared = new Uint8Array(await crypto.subtle.deriveBits(ecdh, server.privateKey, 256));
  // RFC 8291 §3.3: IKM from the ECDH secret, keyed by the auth secret, bound to both public keys.
  const ikm = await hkdf(authSecret, shared, concat(utf8("WebPush: info\0"), uaPublic, server.publicKey), 32);
  const cek = await hkdf(salt, ikm, utf8("Content-Encoding: aes128gcm\0"), 16);
  const nonce = await hkdf(salt, ikm, utf8("Content-Encoding: nonce\0"), 12);
  // One record, the last: the data, the delimiter 0x02, then zeros (RFC 8188 §2).
  const padded = new Uint8Array(Math.max(padTo, plaintext.length + 1));
  padded.set(plaintext);
  padded[plaintext.length] = 2;
  const key = await crypto.subtle.importKey("raw", cek, "AES-GCM", false, ["encrypt"]);
  const sealed = new Uint8Array(await crypto.subtle.encrypt({ name: "AES-GCM", iv: nonce }, key, padded));
  const header = new Uint8Array(21);
  header.set(salt);
  new DataView(header.buffer).setUint32(16, RECORD_SIZE);
  header[20] = server.publicKey.length;
  return concat(header, server.publicKey, sealed);
}

/* ---------- VAPID (RFC 8292) ---------- */

const signingKeys = new Map<string, Promise<CryptoKey>>();
const vapidTokens = new Map<string, { header: string; until: number }>();

function vapidKey({ publicKey, privateKey }: VapidKeys): Promise<CryptoKey> {
  const cacheKey = `${publicKey}.${privateKey}`;
  let key = signingKeys.get(cacheKey);
  if (!key) {
    const point = fromBase64url(publicKey);
    const jwk = {
      kty: "EC",
      crv: "P-256",
      d: privateKey,
      x: base64url(point.slice(1, 33)),
      y: base64url(point.slice(33, 65)),
    };
    key = crypto.subtle.importKey("jwk", jwk, { name: "ECDSA", namedCurve: "P-256" }, false, ["sign"]);
    key.catch(() => signingKeys.delete(cacheKey));
    signingKeys.set(cacheKey, key);
  }
  return key;
}

/** `vapid t=<JWT>, k=<public key>` for pushes to `endpoint`'s push service (one token per origin, reused ≤ 1 h). */
export async function vapidAuthorization(endpoint: string, vapid: VapidKeys, now = Date.now()): Promise<string> {
  const audience = new URL(endpoint).origin;
  const cacheKey = `${vapid.publicKey} ${audience}`;
  const cached = vapidTokens.get(cacheKey);
  if (cached && cached.until > now) return cached.header;
  const jwt = await signJwt("ES256", await vapidKey(vapid), {
    aud: audience,
    exp: epochSeconds(now) + VAPID_VALID_S,
    sub: vapid.subject,
  });
  const header = `vapid t=${jwt}, k=${vapid.publicKey}`;
  vapidTokens.set(cacheKey, { header, until: now + VAPID_REUSE_MS });
  return header;
}

/** The request that pushes `event` to a browser's subscription: `{"type","id"}`, encrypted. */
export async function webPushRequest(target: WebPushTarget, event: PushEvent, vapid: VapidKeys, now = Date.now()) {
  const { endpoint, keys } = target.subscription;
  const body = await encryptPayload(utf8(JSON.stringify({ type: event.type, id: event.id })), keys);
  return new Request(endpoint, {
    method: "POST",
    headers: {
      Authorization: await vapidAuthorization(endpoint, vapid, now),
      "Content-Encoding": "aes128gcm",
      "Content-Type": "application/octet-stream",
      TTL: String(PUSH_TTL_SECONDS),
      Urgency: "high",
      // RFC 8030 §5.4: a newer push of the same topic replaces one still undelivered.
      Topic: event.type,
    },
    body,
    redirect: "manual",
  });
}

/** Sends `event` to a browser: the push service's answer, as an outcome (outcome.ts). */
export async function sendWebPush(
  target: WebPushTarget,
  event: PushEvent,
  vapid: VapidKeys,
  now = Date.now(),
): Promise<PushOutcome> {
  const request = await webPushRequest(target, event, vapid, now);
  return sendAndClassify(() => fetch(request, { signal: AbortSignal.timeout(SEND_TIMEOUT_MS) }));
}
