import {
  createExecutionContext,
  createScheduledController,
  runDurableObjectAlarm,
  runInDurableObject,
  waitOnExecutionContext,
} from "cloudflare:test";
import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, inject, it } from "vitest";
import { createApp } from "../../src/app";
import worker from "../../src/index";
import { sha256Hex } from "../../src/lib/crypto";
import { createDeps } from "../../src/services/create-deps";
import { resealProviderSecrets, rotateProviderSecrets } from "../../src/services/provider-secrets";
import { listBlocked } from "../../src/routes/buzz/buzz.routes";
import { answer, as, call, countRows, DEMO, expectError, failingD1, insertToken, secureNumberOf } from "../helpers";
import { createDb } from "../../src/db/client";
import { setProviderSigning } from "../../src/services/provider-signing";
import { parseXml } from "../support/xml";

/**
 * A provider's number pointed straight at the service (docs/providers.md):
 * signed requests (Twilio's X-Twilio-Signature made by the `twilio` package
 * itself, Telnyx's Ed25519 with a Web Crypto key pair), the operator's
 * signing configuration, and TwiML/TeXML answers compared with what
 * `twilio`'s VoiceResponse builds.
 */

/** Asks Twilio's own library (test/support/twilio-reference.ts, in Node). */
async function twilioLibrary<T>(ask: Record<string, unknown>): Promise<T> {
  const response = await fetch(inject("twilioReference"), { method: "POST", body: JSON.stringify(ask) });
  expect(response.status).toBe(200);
  // Twilio's own library's answer (the oracle), not this API's: no route schema to read it with.
  return ((await response.json()) as { result: T }).result;
}

const ADMIN = `sk_signing_admin_${Date.now()}`;
const alice = DEMO.people.alice;
let ALICE = "";
const ACME = DEMO.acmePhone;
const STRANGER = "+16505550123";
const LOOKUP = "http://api.test/apps/buzz/trust-lookup";
/** A Twilio auth token (32 hex digits, like the real ones). */
const AUTH_TOKEN = "0123456789abcdef0123456789abcdef";

beforeAll(async () => {
  await insertToken(ADMIN, { serviceName: "operator", scopes: ["platform:admin"] });
  ALICE = (await secureNumberOf("alice")).e164;
});

/** A new provider token and its id. */
async function providerToken(name: string) {
  const token = `sk_${name}_${crypto.randomUUID().replaceAll("-", "")}`;
  await insertToken(token, { serviceName: name, scopes: ["calls:lookup"] });
  const row = await env.DB.prepare("SELECT id FROM access_tokens WHERE token_hash = ?")
    .bind(await sha256Hex(token))
    .first<{ id: number }>();
  return { token, id: row!.id };
}

const configure = (id: number, body: unknown) =>
  call(`/internal/providers/${id}/signing`, { method: "PUT", token: ADMIN, body });

/** The request Twilio sends for an incoming call: its form fields, signed with `signature` (absent: unsigned). */
function twilioPost(token: string, fields: Record<string, string>, signature?: string, url = LOOKUP) {
  const headers: Record<string, string> = {
    "Content-Type": "application/x-www-form-urlencoded",
    Authorization: `Basic ${btoa(`twilio:${token}`)}`,
  };
  if (signature !== undefined) headers["X-Twilio-Signature"] = signature;
  return exportsFetch(url, { method: "POST", headers, body: new URLSearchParams(fields).toString() });
}

/** A request to the full URL `url` (on the test origin, http://api.test). */
const exportsFetch = (url: string, init: { method?: string; headers?: Record<string, string>; body?: string }) =>
  call(url.slice("http://api.test".length), init);

/** A Twilio incoming-call form (the fields Twilio posts), from `from` to Alice. */
const incomingCall = (from: string, extra: Record<string, string> = {}) => ({
  AccountSid: "AC0123456789abcdef0123456789abcdef",
  ApiVersion: "2010-04-01",
  CallSid: `CA${crypto.randomUUID().replaceAll("-", "")}`,
  CallStatus: "ringing",
  Called: ALICE,
  Caller: from,
  Direction: "inbound",
  From: from,
  StirVerstat: "TN-Validation-Passed-A",
  To: ALICE,
  ...extra,
});

/** Alice's blocked calls' caller ids, once `expected` is among them (appended after the answer). */
async function blockedCallerIds(expected: string): Promise<string[]> {
  for (let i = 0; i < 80; i++) {
    const calls = await answer(await as("alice").get("/apps/buzz/blocked"), 200, listBlocked);
    const ids = calls.map((row) => row.caller_id);
    if (ids.includes(expected)) return ids;
    await scheduler.wait(25);
  }
  throw new Error(`${expected} was never recorded`);
}

/** Whether Twilio's own library accepts `signature` for `fields` posted to the lookup (a form cut elsewhere). */
const stillVerifies = (signature: string, fields: Record<string, string>) =>
  twilioLibrary<boolean>({ op: "validate", authToken: AUTH_TOKEN, signature, url: LOOKUP, params: fields });

describe("Twilio: X-Twilio-Signature", () => {
  let provider: { token: string; id: number };
  beforeAll(async () => {
    provider = await providerToken("twilio");
    const configured = await configure(provider.id, { kind: "twilio", auth_token: AUTH_TOKEN });
    expect(configured.status).toBe(200);
    const body = await configured.text();
    expect(JSON.parse(body)).toEqual({ token_id: provider.id, kind: "twilio" });
    expect(body).not.toContain(AUTH_TOKEN);
  });

  it("a form signed by twilio's getExpectedTwilioSignature is answered; the library validates it", async () => {
    const fields = incomingCall(ACME);
    const signature = await twilioLibrary<string>({ op: "sign", authToken: AUTH_TOKEN, url: LOOKUP, params: fields });
    expect(
      await twilioLibrary<boolean>({ op: "validate", authToken: AUTH_TOKEN, signature, url: LOOKUP, params: fields }),
    ).toBe(true);
    const response = await twilioPost(provider.token, fields, signature);
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ trusted: true, user_id: alice, caller_verification: "A" });
  });

  it("a captured form cut again at another place (same signature) cannot drop its failed verification: 403", async () => {
    const spoofed = incomingCall(ACME, { StirVerstat: "TN-Validation-Failed-A" });
    const signature = await twilioLibrary<string>({ op: "sign", authToken: AUTH_TOKEN, url: LOOKUP, params: spoofed });
    const first = await twilioPost(provider.token, spoofed, signature);
    expect(await first.json()).toEqual({ trusted: false, user_id: alice, caller_verification: "failed" });
    // Twilio's HMAC input runs names and values together: the same bytes cut elsewhere still verify.
    const { StirVerstat: _dropped, ...rest } = spoofed;
    for (const resplit of [
      { ...rest, StirVerst: "atTN-Validation-Failed-A" },
      { ...rest, StirVerstatT: "N-Validation-Failed-A" },
    ]) {
      expect(await stillVerifies(signature, resplit)).toBe(true);
      expect(await expectError(await twilioPost(provider.token, resplit, signature), 403, "Forbidden")).toContain(
        "verification field",
      );
    }
  });

  it("nor by letting the field before swallow it, or running its value on into the next field", async () => {
    const passport = "eyJhbGciOiJFUzI1NiJ9.eyJhdHRlc3QiOiJBIn0.c2ln";
    const spoofed = incomingCall(ACME, { StirPassportToken: passport, StirVerstat: "TN-Validation-Failed-A" });
    const signature = await twilioLibrary<string>({ op: "sign", authToken: AUTH_TOKEN, url: LOOKUP, params: spoofed });
    const { StirVerstat, To, ...rest } = spoofed;
    // StirPassportToken's value takes `StirVerstat` and its value: no verification field is left.
    const swallowed = { ...rest, To, StirPassportToken: `${passport}StirVerstat${StirVerstat}` };
    // StirVerstat's value runs on over `To` and its number (`Called` still names the receiver).
    const runOn = { ...rest, StirVerstat: `${StirVerstat}To${To}` };
    for (const resplit of [swallowed, runOn]) expect(await stillVerifies(signature, resplit)).toBe(true);
    await expectError(await twilioPost(provider.token, swallowed, signature), 403, "Forbidden");
    expect(await (await twilioPost(provider.token, runOn, signature)).json()).toMatchObject({
      trusted: false,
      caller_verification: "failed",
    });
  });

  it("nor by cutting its value short, or its name in two, the rest a last field named in lower case: 403", async () => {
    const passport = "eyJhbGciOiJFUzI1NiJ9.eyJhdHRlc3QiOiJBIn0.c2ln";
    const spoofed = incomingCall(ACME, { StirPassportToken: passport, StirVerstat: "TN-Validation-Failed-A" });
    const signature = await twilioLibrary<string>({ op: "sign", authToken: AUTH_TOKEN, url: LOOKUP, params: spoofed });
    const { StirVerstat, To, ...rest } = spoofed;
    // A name starting in lower case sorts after every name Twilio sends: it can take the form's tail
    // (`Called` still names the receiver once `To` is gone).
    const cutShort = { ...rest, StirVerstat: "TN-Validation-Fai", "led-ATo": To };
    const nameSplit = { ...rest, StirPassportToken: `${passport}S`, [`tirVerstat${StirVerstat}To`]: To };
    for (const resplit of [cutShort, nameSplit]) {
      expect(await stillVerifies(signature, resplit)).toBe(true);
      expect(await expectError(await twilioPost(provider.token, resplit, signature), 403, "Forbidden")).toContain(
        "failed caller verification",
      );
    }
  });

  it("forged, absent or signed with another auth token: 403, and nothing is recorded", async () => {
    const forgedFields = incomingCall(STRANGER, { caller_id: "FORGED TWILIO" });
    const signature = await twilioLibrary<string>({
      op: "sign",
      authToken: AUTH_TOKEN,
      url: LOOKUP,
      params: forgedFields,
    });
    // The fields changed after signing (a spoofer rewrote From), no signature, another account's token.
    const tampered = { ...forgedFields, From: STRANGER.replace("0123", "0124") };
    await expectError(await twilioPost(provider.token, tampered, signature), 403, "Forbidden");
    await expectError(await twilioPost(provider.token, forgedFields), 403, "Forbidden");
    const otherAccount = await twilioLibrary<string>({
      op: "sign",
      authToken: "fedcba9876543210fedcba9876543210",
      url: LOOKUP,
      params: forgedFields,
    });
    await expectError(await twilioPost(provider.token, forgedFields, otherAccount), 403, "Forbidden");
    await expectError(await twilioPost(provider.token, forgedFields, "bm90IGEgc2lnbmF0dXJl"), 403, "Forbidden");

    // A valid untrusted call after them is recorded; the refused ones never were.
    const valid = incomingCall(STRANGER, { caller_id: "SIGNED TWILIO" });
    const validSignature = await twilioLibrary<string>({
      op: "sign",
      authToken: AUTH_TOKEN,
      url: LOOKUP,
      params: valid,
    });
    const answered = await twilioPost(provider.token, valid, validSignature);
    expect(await answered.json()).toEqual({ trusted: false, user_id: alice, caller_verification: "A" });
    const ids = await blockedCallerIds("SIGNED TWILIO");
    expect(ids).not.toContain("FORGED TWILIO");
  });

  it("a GET signs its URL alone; a JSON body is bound by the URL's bodySHA256", async () => {
    const url = `${LOOKUP}?${new URLSearchParams({ To: ALICE, From: ACME, StirVerstat: "TN-Validation-Passed-B" })}`;
    const signature = await twilioLibrary<string>({ op: "sign", authToken: AUTH_TOKEN, url, params: {} });
    const headers = { Authorization: `Bearer ${provider.token}` };
    const get = await exportsFetch(url, { headers: { ...headers, "X-Twilio-Signature": signature } });
    expect(await get.json()).toEqual({ trusted: true, user_id: alice, caller_verification: "B" });
    await expectError(
      await exportsFetch(`${url}&x=1`, { headers: { ...headers, "X-Twilio-Signature": signature } }),
      403,
      "Forbidden",
    );

    const body = JSON.stringify({ To: ALICE, From: ACME });
    const hash = await twilioLibrary<string>({ op: "bodyHash", body });
    const jsonUrl = `${LOOKUP}?bodySHA256=${hash}`;
    const jsonSignature = await twilioLibrary<string>({
      op: "sign",
      authToken: AUTH_TOKEN,
      url: jsonUrl,
      params: null,
    });
    expect(
      await twilioLibrary<boolean>({
        op: "validateWithBody",
        authToken: AUTH_TOKEN,
        signature: jsonSignature,
        url: jsonUrl,
        body,
      }),
    ).toBe(true);
    const jsonHeaders = { ...headers, "Content-Type": "application/json", "X-Twilio-Signature": jsonSignature };
    const posted = await exportsFetch(jsonUrl, { method: "POST", headers: jsonHeaders, body });
    expect(await posted.json()).toEqual({ trusted: true, user_id: alice, caller_verification: null });
    const swapped = JSON.stringify({ To: ALICE, From: STRANGER });
    await expectError(
      await exportsFetch(jsonUrl, { method: "POST", headers: jsonHeaders, body: swapped }),
      403,
      "Forbidden",
    );
  });

  it("a voice URL written with its Basic credentials verifies as Twilio signed it, with or without them", async () => {
    const fields = incomingCall(ACME);
    const withCredentials = `http://twilio:${provider.token}@api.test/apps/buzz/trust-lookup`;
    const signature = await twilioLibrary<string>({
      op: "sign",
      authToken: AUTH_TOKEN,
      url: withCredentials,
      params: fields,
    });
    const response = await twilioPost(provider.token, fields, signature);
    expect(await response.json()).toEqual({ trusted: true, user_id: alice, caller_verification: "A" });
    // The same signature with other credentials in the header is not Twilio's.
    const mismatched = await call("/apps/buzz/trust-lookup", {
      method: "POST",
      body: new URLSearchParams(fields).toString(),
      headers: {
        "Content-Type": "application/x-www-form-urlencoded",
        Authorization: `Basic ${btoa(`someone:${provider.token}`)}`,
        "X-Twilio-Signature": signature,
      },
    });
    await expectError(mismatched, 403, "Forbidden");
  });

  it("a token without a configuration still answers unsigned requests", async () => {
    const plain = await providerToken("plain");
    const response = await twilioPost(plain.token, incomingCall(ACME));
    expect(await response.json()).toEqual({ trusted: true, user_id: alice, caller_verification: "A" });
  });
});

const bytesToBase64 = (bytes: ArrayBuffer) => btoa(String.fromCharCode(...new Uint8Array(bytes)));

describe("Telnyx: telnyx-signature-ed25519", () => {
  let provider: { token: string; id: number };
  let keys: CryptoKeyPair;
  beforeAll(async () => {
    provider = await providerToken("telnyx");
    keys = (await crypto.subtle.generateKey({ name: "Ed25519" }, true, ["sign", "verify"])) as CryptoKeyPair;
    const publicKey = bytesToBase64((await crypto.subtle.exportKey("raw", keys.publicKey)) as ArrayBuffer);
    const configured = await configure(provider.id, { kind: "telnyx", public_key: publicKey });
    expect(configured.status).toBe(200);
    expect(await configured.json()).toEqual({ token_id: provider.id, kind: "telnyx" });
  });

  async function sign(body: string, timestamp: string, key = keys.privateKey) {
    const signed = await crypto.subtle.sign({ name: "Ed25519" }, key, new TextEncoder().encode(`${timestamp}|${body}`));
    return bytesToBase64(signed);
  }

  /** Telnyx Call Control's call.initiated event for a call from `from` to Alice. */
  const event = (from: string, extra: Record<string, unknown> = {}) =>
    JSON.stringify({
      data: {
        event_type: "call.initiated",
        id: crypto.randomUUID(),
        occurred_at: new Date().toISOString(),
        payload: {
          from,
          to: ALICE,
          direction: "incoming",
          shaken_stir_attestation: "A",
          shaken_stir_validated: true,
          ...extra,
        },
        record_type: "event",
      },
      meta: { attempt: 1 },
    });

  const post = (body: string, headers: Record<string, string>, path = "/apps/buzz/trust-lookup") =>
    call(path, {
      method: "POST",
      token: provider.token,
      body,
      headers: { "Content-Type": "application/json", ...headers },
    });

  const now = () => String(Math.floor(Date.now() / 1000));

  it("a call.initiated event signed with the account's key is answered", async () => {
    const body = event(ACME);
    const timestamp = now();
    const response = await post(body, {
      "telnyx-signature-ed25519": await sign(body, timestamp),
      "telnyx-timestamp": timestamp,
    });
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ trusted: true, user_id: alice, caller_verification: "A" });
  });

  it("forged, absent or stale (past 5 minutes): 403, and nothing is recorded", async () => {
    const body = event(STRANGER, { caller_id_name: "x" });
    const forgedBody = JSON.stringify({ To: ALICE, From: STRANGER, caller_id: "FORGED TELNYX" });
    const timestamp = now();
    const other = (await crypto.subtle.generateKey({ name: "Ed25519" }, true, ["sign", "verify"])) as CryptoKeyPair;
    const stale = String(Math.floor(Date.now() / 1000) - 301);
    const refused: Record<string, string>[] = [
      { "telnyx-signature-ed25519": await sign(body, timestamp), "telnyx-timestamp": timestamp }, // signed another body
      {
        "telnyx-signature-ed25519": await sign(forgedBody, timestamp, other.privateKey),
        "telnyx-timestamp": timestamp,
      },
      {},
      { "telnyx-timestamp": timestamp },
      { "telnyx-signature-ed25519": await sign(forgedBody, stale), "telnyx-timestamp": stale },
      {
        "telnyx-signature-ed25519": await sign(forgedBody, timestamp),
        "telnyx-timestamp": String(Number(timestamp) + 400),
      },
    ];
    for (const headers of refused) await expectError(await post(forgedBody, headers), 403, "Forbidden");

    const validBody = JSON.stringify({ To: ALICE, From: STRANGER, caller_id: "SIGNED TELNYX" });
    const answered = await post(validBody, {
      "telnyx-signature-ed25519": await sign(validBody, timestamp),
      "telnyx-timestamp": timestamp,
    });
    expect(await answered.json()).toEqual({ trusted: false, user_id: alice, caller_verification: null });
    expect(await blockedCallerIds("SIGNED TELNYX")).not.toContain("FORGED TELNYX");
  });
});

describe("Telnyx: what a captured request can still ask (the audit's reproductions)", () => {
  let provider: { token: string; id: number };
  let keys: CryptoKeyPair;
  beforeAll(async () => {
    provider = await providerToken("telnyxaudit");
    keys = (await crypto.subtle.generateKey({ name: "Ed25519" }, true, ["sign", "verify"])) as CryptoKeyPair;
    const publicKey = bytesToBase64((await crypto.subtle.exportKey("raw", keys.publicKey)) as ArrayBuffer);
    expect((await configure(provider.id, { kind: "telnyx", public_key: publicKey })).status).toBe(200);
  });

  /** Telnyx's headers for `body` signed at `timestamp` (now by default). */
  async function signed(body: string, timestamp = String(Math.floor(Date.now() / 1000))) {
    const bytes = new TextEncoder().encode(`${timestamp}|${body}`);
    const signature = bytesToBase64(await crypto.subtle.sign({ name: "Ed25519" }, keys.privateKey, bytes));
    return { "telnyx-signature-ed25519": signature, "telnyx-timestamp": timestamp };
  }

  const lookup = (path: string, init: { method?: string; body?: string; headers: Record<string, string> }) =>
    call(path, { ...init, token: provider.token, headers: { "Content-Type": "application/json", ...init.headers } });

  it("the query string asks nothing: a signed POST with ?inbound=…&StirVerstat=… answers what its body says", async () => {
    // An untrusted caller, no verification, signed; the query names Acme's trusted number at level A.
    const body = JSON.stringify({
      data: { event_type: "call.initiated", id: crypto.randomUUID(), payload: { to: ALICE, from: STRANGER } },
    });
    const query = new URLSearchParams({ inbound: ACME, StirVerstat: "TN-Validation-Passed-A", From: ACME });
    const response = await lookup(`/apps/buzz/trust-lookup?${query}`, {
      method: "POST",
      body,
      headers: await signed(body),
    });
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ trusted: false, user_id: alice, caller_verification: null });
  });

  it("a GET is refused (403): its signature covers `<timestamp>|`, so it would vouch for any query", async () => {
    const headers = await signed("");
    for (const path of [
      `/apps/buzz/trust-lookup?${new URLSearchParams({ To: ALICE, From: ACME })}`,
      `/apps/buzz/trust-lookup?${new URLSearchParams({ To: ALICE, From: STRANGER, caller_id: "TELNYX GET" })}`,
      `/apps/buzz/call-lookup?number_code=1&number=${ALICE.slice(2)}&inbound_code=1&inbound=${ACME.slice(2)}`,
    ]) {
      const response = await lookup(path, { headers });
      await expectError(response, 403, "Forbidden");
    }
    // The signed request a GET could have been is still answered as a POST.
    const body = JSON.stringify({ To: ALICE, From: ACME });
    const post = await lookup("/apps/buzz/trust-lookup", { method: "POST", body, headers: await signed(body) });
    expect(await post.json()).toEqual({ trusted: true, user_id: alice, caller_verification: null });
  });

  it("a signed request is answered once: its replay, even with a query string added, is 403 and records nothing", async () => {
    const body = JSON.stringify({ To: ALICE, From: STRANGER, caller_id: "TELNYX ONCE" });
    const headers = await signed(body);
    const first = await lookup("/apps/buzz/trust-lookup", { method: "POST", body, headers });
    expect(await first.json()).toEqual({ trusted: false, user_id: alice, caller_verification: null });
    const query = new URLSearchParams({ inbound: ACME, StirVerstat: "TN-Validation-Passed-A" });
    for (const path of ["/apps/buzz/trust-lookup", `/apps/buzz/trust-lookup?${query}`]) {
      const replay = await lookup(path, { method: "POST", body, headers });
      expect(await expectError(replay, 403, "Forbidden")).toMatch(/already answered/);
    }
    // The same signature in base64url without padding is the same signed request.
    const recoded = headers["telnyx-signature-ed25519"].replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
    const again = await lookup("/apps/buzz/trust-lookup", {
      method: "POST",
      body,
      headers: { ...headers, "telnyx-signature-ed25519": recoded },
    });
    await expectError(again, 403, "Forbidden");
    // One blocked call: the first request's.
    await scheduler.wait(100);
    expect((await blockedCallerIds("TELNYX ONCE")).filter((id) => id === "TELNYX ONCE")).toHaveLength(1);
  });

  it("copies of one signed request sent at once: exactly one is answered", async () => {
    const body = JSON.stringify({ To: ALICE, From: ACME, shaken_stir_attestation: "A", shaken_stir_validated: true });
    const headers = await signed(body);
    const answers = await Promise.all(
      Array.from({ length: 6 }, () => lookup("/apps/buzz/trust-lookup", { method: "POST", body, headers })),
    );
    expect(answers.map((response) => response.status).sort()).toEqual([200, 403, 403, 403, 403, 403]);
  });

  it("the same call signed again (a new timestamp) is a new request and is answered", async () => {
    const body = JSON.stringify({ To: ALICE, From: ACME, caller_id: "TELNYX SIGNED TWICE" });
    const second = String(Math.floor(Date.now() / 1000) - 1);
    for (const headers of [await signed(body), await signed(body, second)]) {
      const response = await lookup("/apps/buzz/trust-lookup", { method: "POST", body, headers });
      expect(await response.json()).toEqual({ trusted: true, user_id: alice, caller_verification: null });
    }
  });

  it("the answer format may still come from the URL (?answer=twiml): how to answer, not what", async () => {
    const form = new URLSearchParams({ To: ALICE, From: ACME, CallSid: "v3:texml" }).toString();
    const response = await lookup("/apps/buzz/trust-lookup?answer=twiml&From=%2B16505550123", {
      method: "POST",
      body: form,
      headers: { ...(await signed(form)), "Content-Type": "application/x-www-form-urlencoded" },
    });
    expect(response.status).toBe(200);
    expect(await response.text()).toContain(`<Client>person-${alice}</Client>`);
  });
});

describe("the replay guard keeps only what its window needs", () => {
  const guard = (name: string) => env.REPLAY_GUARD.get(env.REPLAY_GUARD.idFromName(name));

  it("a digest is refused while it is kept, forgotten once expired, and the alarm clears the rest", async () => {
    const object = guard(`replay:test:${crypto.randomUUID()}`);
    const soon = Date.now() + 60_000;
    expect(await object.firstUse("digest-1", soon)).toBe(true);
    expect(await object.firstUse("digest-1", soon)).toBe(false);
    // Expired digests are pruned by the next call: the same digest is new again, and the table holds only it.
    expect(await object.firstUse("old-1", Date.now() - 1)).toBe(true);
    expect(await object.firstUse("old-2", Date.now() - 1)).toBe(true);
    expect(await object.firstUse("old-1", Date.now() - 1)).toBe(true);
    expect(await object.size()).toBe(2); // digest-1 and the last old-1, not yet pruned
    expect(await runInDurableObject(object, (_, state) => state.storage.getAlarm())).not.toBeNull();
    await runInDurableObject(object, (_, state) => state.storage.setAlarm(Date.now()));
    await runDurableObjectAlarm(object);
    expect(await object.size()).toBe(1);
  });
});

describe("the Twilio auth token at rest", () => {
  /** The token's stored signing configuration, as D1 holds it (text). */
  const storedSigning = async (id: number) =>
    (await env.DB.prepare("SELECT signing FROM access_tokens WHERE id = ?").bind(id).first<{ signing: string }>())!
      .signing;
  /** The token's `tok:` record in KV, as text. */
  const tokRecord = async (token: string) => env.TRUST_INDEX.get(`tok:${await sha256Hex(token)}`);
  /** A form Twilio signed with `authToken` for the lookup URL. */
  async function signedTwilio(token: string, authToken = AUTH_TOKEN, from = ACME) {
    const fields = incomingCall(from);
    const signature = await twilioLibrary<string>({ op: "sign", authToken, url: LOOKUP, params: fields });
    return twilioPost(token, fields, signature);
  }
  /** The Worker's handle with another PROVIDER_SECRET_KEYS (the deployed secret after an operator changed it). */
  const depsWith = (keys: string | undefined) => createDeps({ ...env, PROVIDER_SECRET_KEYS: keys });
  const KEY_T1 = env.PROVIDER_SECRET_KEYS!;
  const KEY_T2 = `t2:${"cm90YXRlZC1wcm92aWRlci1rZXktcm90YXRlZC1rZXktMzI"}`;

  it("is stored sealed (AES-GCM under PROVIDER_SECRET_KEYS' first key) and never reaches KV, yet verifies", async () => {
    const provider = await providerToken("sealed");
    expect((await configure(provider.id, { kind: "twilio", auth_token: AUTH_TOKEN })).status).toBe(200);
    const stored = await storedSigning(provider.id);
    expect(stored).not.toContain(AUTH_TOKEN);
    expect(JSON.parse(stored)).toEqual({ kind: "twilio", sealed: expect.stringMatching(/^v1\.t1\./) });

    expect(await (await signedTwilio(provider.token)).json()).toEqual({
      trusted: true,
      user_id: alice,
      caller_verification: "A",
    });
    // The verification's record (written after the answer) carries the ciphertext, never the auth token.
    let record: string | null = null;
    for (let i = 0; i < 80 && record === null; i++) {
      record = await tokRecord(provider.token);
      if (record === null) await scheduler.wait(25);
    }
    expect(record).not.toBeNull();
    expect(record).not.toContain(AUTH_TOKEN);
    expect(JSON.parse(record!).principal.signing).toEqual(JSON.parse(stored));
    // Another account's signature still fails against the opened token.
    await expectError(await signedTwilio(provider.token, "fedcba9876543210fedcba9876543210"), 403, "Forbidden");
  });

  it("a sealed value opens only as its own token's: copied to another token's row, it is a 503, not a key", async () => {
    const [from, to] = [await providerToken("sealedfrom"), await providerToken("sealedto")];
    expect((await configure(from.id, { kind: "twilio", auth_token: AUTH_TOKEN })).status).toBe(200);
    await env.DB.prepare("UPDATE access_tokens SET signing = ? WHERE id = ?")
      .bind(await storedSigning(from.id), to.id)
      .run();
    const response = await signedTwilio(to.token);
    expect(response.status).toBe(503);
    expect(await response.text()).toMatch(/does not open/);
    // A rotation leaves such a value as it is and counts it.
    const rotation = await rotateProviderSecrets(depsWith(`${KEY_T2},${KEY_T1}`));
    expect(rotation.unopened).toBe(1);
    await rotateProviderSecrets(depsWith(KEY_T1)); // everything back under t1
    await env.DB.prepare("UPDATE access_tokens SET signing = NULL WHERE id = ?").bind(to.id).run();
  });

  it("100 tokens sealed under a key no longer listed do not hold up the rotation, or the minute's job, for the rest", async () => {
    // The oldest rows: sealed under `t0`, which the secret no longer lists (they cannot be opened).
    const gone: number[] = [];
    for (let i = 0; i < 100; i++) {
      const { id } = await providerToken(`gonekey${i}`);
      gone.push(id);
    }
    await env.DB.prepare(
      `UPDATE access_tokens SET signing = '{"kind":"twilio","sealed":"v1.t0.AAAAAAAAAAAAAAAA.AAAA"}' WHERE id IN (${gone.join(",")})`,
    ).run();
    const behind = await providerToken("behindgone");
    expect((await configure(behind.id, { kind: "twilio", auth_token: AUTH_TOKEN })).status).toBe(200);
    try {
      // The minute's job (one chunk) reaches the token behind them.
      const run = await resealProviderSecrets(depsWith(`${KEY_T2},${KEY_T1}`));
      expect(run).toMatchObject({ key_id: "t2", unopened: 100, remaining: false });
      expect(run.resealed).toBeGreaterThanOrEqual(1);
      expect(JSON.parse(await storedSigning(behind.id)).sealed).toMatch(/^v1\.t2\./);
      // The operator's rotation says what is left, and finishes.
      const rotation = await rotateProviderSecrets(depsWith(`${KEY_T1},${KEY_T2}`));
      expect(rotation).toMatchObject({ key_id: "t1", unopened: 100, remaining: false });
      expect(rotation.resealed).toBeGreaterThanOrEqual(1);
      expect(JSON.parse(await storedSigning(behind.id)).sealed).toMatch(/^v1\.t1\./);
    } finally {
      await env.DB.prepare(`UPDATE access_tokens SET signing = NULL WHERE id IN (${gone.join(",")})`).run();
    }
  });

  it("the operator's rotation gets past 150 values under a listed key that do not open (copied rows)", async () => {
    const source = await providerToken("copysource");
    expect((await configure(source.id, { kind: "twilio", auth_token: AUTH_TOKEN })).status).toBe(200);
    const copies: number[] = [];
    for (let i = 0; i < 150; i++) copies.push((await providerToken(`copied${i}`)).id);
    const behind = await providerToken("behindcopies");
    expect((await configure(behind.id, { kind: "twilio", auth_token: AUTH_TOKEN })).status).toBe(200);
    // Sealed under t1 (listed) for the source's id: none of them opens as its own row's.
    await env.DB.prepare(`UPDATE access_tokens SET signing = ? WHERE id IN (${copies.join(",")})`)
      .bind(await storedSigning(source.id))
      .run();
    try {
      const rotation = await rotateProviderSecrets(depsWith(`${KEY_T2},${KEY_T1}`));
      expect(rotation).toMatchObject({ key_id: "t2", unopened: 150, remaining: false });
      expect(JSON.parse(await storedSigning(behind.id)).sealed).toMatch(/^v1\.t2\./);
    } finally {
      await env.DB.prepare(`UPDATE access_tokens SET signing = NULL WHERE id IN (${copies.join(",")})`).run();
      await rotateProviderSecrets(depsWith(KEY_T1)); // everything back under t1
    }
  });

  it("without PROVIDER_SECRET_KEYS: setting a Twilio auth token is a 503 naming it, and nothing is stored", async () => {
    const provider = await providerToken("nokeys");
    const ctx = createExecutionContext();
    const response = await createApp().fetch(
      new Request(`http://api.test/internal/providers/${provider.id}/signing`, {
        method: "PUT",
        headers: { Authorization: `Bearer ${ADMIN}`, "Content-Type": "application/json" },
        body: JSON.stringify({ kind: "twilio", auth_token: AUTH_TOKEN }),
      }),
      { ...env, PROVIDER_SECRET_KEYS: undefined },
      ctx,
    );
    await waitOnExecutionContext(ctx);
    expect(response.status).toBe(503);
    expect(await response.text()).toMatch(/PROVIDER_SECRET_KEYS is not set/);
    expect(await storedSigning(provider.id)).toBeNull();
    await expect(depsWith("t1:tooshort").providerKeys.seal("x", "y")).rejects.toThrow(/is malformed/);
  });

  it("a token stored in clear by an older version still verifies, and the minute cron seals it and rewrites its record", async () => {
    const provider = await providerToken("legacy");
    const hash = await sha256Hex(provider.token);
    const clear = JSON.stringify({ kind: "twilio", authToken: AUTH_TOKEN });
    await env.DB.prepare("UPDATE access_tokens SET signing = ? WHERE id = ?").bind(clear, provider.id).run();
    // The record an older version wrote: the principal with the auth token in clear.
    const principal = { kind: "service", tokenId: provider.id, service: "legacy", scopes: ["calls:lookup"] };
    const oldRecord = { v: 1, principal: { ...principal, signing: JSON.parse(clear) }, expiresAt: null, usedAt: null };
    await env.TRUST_INDEX.put(`tok:${hash}`, JSON.stringify(oldRecord));

    // Before the cron: answered (the auth token read from D1, never from the record).
    expect((await signedTwilio(provider.token)).status).toBe(200);
    await expectError(await signedTwilio(provider.token, "fedcba9876543210fedcba9876543210"), 403, "Forbidden");

    const ctx = createExecutionContext();
    await worker.scheduled!(createScheduledController({ cron: "* * * * *", scheduledTime: Date.now() }), env, ctx);
    await waitOnExecutionContext(ctx);
    const stored = await storedSigning(provider.id);
    expect(stored).not.toContain(AUTH_TOKEN);
    expect(JSON.parse(stored)).toEqual({ kind: "twilio", sealed: expect.stringMatching(/^v1\.t1\./) });
    const record = (await tokRecord(provider.token))!;
    expect(record).not.toContain(AUTH_TOKEN);
    expect(JSON.parse(record).principal.signing).toEqual(JSON.parse(stored));
    expect((await signedTwilio(provider.token)).status).toBe(200);
  });

  it("rotation: a new key put first, the command seals everything under it; the old key may then go", async () => {
    const provider = await providerToken("rotated");
    expect((await configure(provider.id, { kind: "twilio", auth_token: AUTH_TOKEN })).status).toBe(200);
    const underT1 = await storedSigning(provider.id);

    // The operator puts t2 first (t1 still listed) and rotates: sealed again under t2, the records rewritten.
    const rotated = await rotateProviderSecrets(depsWith(`${KEY_T2},${KEY_T1}`));
    expect(rotated).toMatchObject({ key_id: "t2", unopened: 0, remaining: false });
    expect(rotated.resealed).toBeGreaterThanOrEqual(1);
    const underT2 = await storedSigning(provider.id);
    expect(JSON.parse(underT2).sealed).toMatch(/^v1\.t2\./);
    // It opens under t2 alone, as the same auth token; this Worker (t1 only) says which key it lacks.
    expect(
      await depsWith(KEY_T2).providerKeys.open(JSON.parse(underT2).sealed, `access_tokens.signing:${provider.id}`),
    ).toBe(AUTH_TOKEN);
    const withoutT2 = await signedTwilio(provider.token);
    expect(withoutT2.status).toBe(503);
    expect(await withoutT2.text()).toMatch(/PROVIDER_SECRET_KEYS has no key `t2`/);
    // Nothing is due under t2 any more; under t1 first again, the operator's route seals it back.
    expect(await rotateProviderSecrets(depsWith(`${KEY_T2},${KEY_T1}`))).toMatchObject({
      resealed: 0,
      remaining: false,
    });
    const back = await rotateProviderSecrets(depsWith(`${KEY_T1},${KEY_T2}`));
    expect(back).toMatchObject({ key_id: "t1", unopened: 0, remaining: false });
    expect(JSON.parse(await storedSigning(provider.id)).sealed).toMatch(/^v1\.t1\./);
    expect(await storedSigning(provider.id)).not.toBe(underT1); // a new IV every time
    expect((await signedTwilio(provider.token)).status).toBe(200);

    const route = await call("/internal/provider-keys/rotate", { method: "POST", token: ADMIN });
    expect(route.status).toBe(200);
    expect(await route.json()).toEqual({ key_id: "t1", resealed: 0, unopened: 0, remaining: false });
    await expectError(
      await call("/internal/provider-keys/rotate", { method: "POST", token: provider.token }),
      403,
      "Forbidden",
    );
  });
});

describe("the operator's signing configuration", () => {
  it("only for an active provider token; a Telnyx key must be one; the secret is never shown; it can be cleared", async () => {
    const provider = await providerToken("clearable");
    const person = await env.DB.prepare("SELECT id FROM access_tokens WHERE person_id IS NOT NULL LIMIT 1").first<{
      id: number;
    }>();
    await expectError(await configure(person!.id, { kind: "twilio", auth_token: AUTH_TOKEN }), 404, "Not Found");
    await expectError(await configure(99_999_999, { kind: "twilio", auth_token: AUTH_TOKEN }), 404, "Not Found");
    await expectError(await configure(provider.id, { kind: "telnyx", public_key: "x".repeat(44) }), 400, "Bad Request");
    await expectError(await configure(provider.id, { kind: "plivo", auth_token: AUTH_TOKEN }), 400, "Bad Request");
    await expectError(await configure(provider.id, { kind: "twilio" }), 400, "Bad Request");
    await expectError(
      await call(`/internal/providers/${provider.id}/signing`, {
        method: "PUT",
        token: (await providerToken("notadmin")).token,
        body: { kind: "twilio", auth_token: AUTH_TOKEN },
      }),
      403,
      "Forbidden",
    );

    expect((await configure(provider.id, { kind: "twilio", auth_token: AUTH_TOKEN })).status).toBe(200);
    await expectError(await twilioPost(provider.token, incomingCall(ACME)), 403, "Forbidden");
    const cleared = await call(`/internal/providers/${provider.id}/signing`, { method: "DELETE", token: ADMIN });
    expect(await cleared.json()).toEqual({ token_id: provider.id, kind: null });
    expect((await twilioPost(provider.token, incomingCall(ACME))).status).toBe(200);
  });

  it("a configuration D1 took always reaches the token's KV record, even when D1 fails right after", async () => {
    const provider = await providerToken("blip");
    const hash = await sha256Hex(provider.token);
    // The token is in use: every server verifies it from its KV record.
    expect(
      (await call(`/apps/buzz/trust-lookup?To=%2B12025550101&From=%2B14155550100`, { token: provider.token })).status,
    ).toBe(200);
    for (let i = 0; i < 80 && (await env.TRUST_INDEX.get(`tok:${hash}`)) === null; i++) await scheduler.wait(25);
    expect(await env.TRUST_INDEX.get(`tok:${hash}`)).not.toBeNull();
    // D1 takes the change, then fails every later round trip (a blip).
    let batches = 0;
    const blip = failingD1(/$^/, () => new Error("never"), {
      batch: (statements: D1PreparedStatement[]) =>
        ++batches === 1 ? env.DB.batch(statements) : Promise.reject(new Error("D1_ERROR: network connection lost")),
    });
    const deps = { ...createDeps(env), db: createDb(blip) };
    await expect(setProviderSigning(deps, provider.id, { kind: "twilio", authToken: AUTH_TOKEN })).rejects.toThrow();
    const stored = await env.DB.prepare("SELECT signing FROM access_tokens WHERE id = ?")
      .bind(provider.id)
      .first<{ signing: string }>();
    expect(JSON.parse(stored!.signing)).toMatchObject({ kind: "twilio" });
    // The record's rewrite is left as index work, which the sweep applies.
    expect(await countRows("SELECT count(*) AS n FROM index_work WHERE key = ?", `tok:${hash}`)).toBe(1);
  });
});

describe("TwiML/TeXML answers", () => {
  const lookup = (query: Record<string, string>, headers: Record<string, string> = {}, token?: string) =>
    call(`/apps/buzz/trust-lookup?${new URLSearchParams(query)}`, {
      token: token === undefined ? undefined : token,
      headers,
    });
  let token = "";
  beforeAll(async () => {
    token = (await providerToken("twiml")).token;
  });

  async function xml(response: Response, status = 200) {
    expect(response.status).toBe(status);
    expect(response.headers.get("Content-Type")).toMatch(/^application\/xml/);
    const text = await response.text();
    parseXml(text);
    return text;
  }

  it("a trusted call dials the member's calling identity, as VoiceResponse builds it", async () => {
    const expected = await twilioLibrary<string>({ op: "twiml", dial: { client: `person-${alice}` } });
    const byAccept = await lookup({ To: ALICE, From: ACME }, { Accept: "application/xml" }, token);
    expect(await xml(byAccept)).toBe(expected);
    const byQuery = await lookup({ To: ALICE, From: ACME, answer: "twiml" }, {}, token);
    expect(await xml(byQuery)).toBe(expected);
    expect(parseXml(expected)).toEqual({
      name: "Response",
      attributes: {},
      children: [
        { name: "Dial", attributes: {}, children: [{ name: "Client", attributes: {}, children: [`person-${alice}`] }] },
      ],
    });
  });

  it("untrusted, unknown, spoofed, or no input at all: Reject, and the blocked call is recorded as for JSON", async () => {
    const reject = await twilioLibrary<string>({ op: "twiml", reject: true });
    const cases: Record<string, string>[] = [
      { To: ALICE, From: STRANGER, caller_id: "TWIML STRANGER" },
      { To: "+12025550110", From: ACME },
      { To: ALICE, From: ACME, StirVerstat: "TN-Validation-Failed-A" },
      {},
    ];
    for (const query of cases) {
      expect(await xml(await lookup({ ...query, answer: "twiml" }, {}, token))).toBe(reject);
    }
    const posted = await call("/apps/buzz/trust-lookup?answer=twiml", {
      method: "POST",
      token,
      body: "garbage",
      headers: { "Content-Type": "application/x-www-form-urlencoded" },
    });
    expect(await xml(posted)).toBe(reject);
    expect(await blockedCallerIds("TWIML STRANGER")).toContain("TWIML STRANGER");
  });

  it("a refusal keeps its status and is still a valid Reject, with the reason in Lookup-Error", async () => {
    const reject = await twilioLibrary<string>({ op: "twiml", reject: true });
    const unauthenticated = await lookup({ To: ALICE, From: ACME }, { Accept: "application/xml" });
    expect(await xml(unauthenticated, 401)).toBe(reject);
    expect(unauthenticated.headers.get("WWW-Authenticate")).toMatch(/^Basic/);
    expect(unauthenticated.headers.get("Lookup-Error")).toMatch(/^Unauthorized: /);
    const person = await lookup({ To: ALICE, From: ACME, answer: "twiml" }, {}, DEMO.tokens.alice);
    expect(await xml(person, 403)).toBe(reject);

    const signed = await providerToken("twimlsigned");
    expect((await configure(signed.id, { kind: "twilio", auth_token: AUTH_TOKEN })).status).toBe(200);
    const unsigned = await call("/apps/buzz/trust-lookup?answer=twiml", {
      method: "POST",
      body: new URLSearchParams(incomingCall(ACME)).toString(),
      headers: { "Content-Type": "application/x-www-form-urlencoded", Authorization: `Bearer ${signed.token}` },
    });
    expect(await xml(unsigned, 403)).toBe(reject);
  });

  it("JSON stays the answer without asking (and when JSON is preferred)", async () => {
    const plain = await lookup({ To: ALICE, From: ACME }, { Accept: "application/json, application/xml" }, token);
    expect(plain.headers.get("Content-Type")).toMatch(/^application\/json/);
    expect(await plain.json()).toEqual({ trusted: true, user_id: alice, caller_verification: null });
  });
});
