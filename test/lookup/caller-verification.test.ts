import fc from "fast-check";
import { beforeAll, describe, expect, it } from "vitest";
import { applyVerification } from "../../src/domain/caller-verification";
import { callerVerificationOf } from "../../src/services/caller-verification";
import { callLookup, listBlocked, trustLookupGet } from "../../src/routes/buzz/buzz.routes";
import {
  answer,
  as,
  call,
  countD1,
  DEMO,
  expectError,
  indexKeysWritten,
  inPersonObject,
  personObject,
  secureNumberOf,
} from "../helpers";
import { fileTokens } from "../principals";

/**
 * Caller verification (STIR/SHAKEN, docs/providers.md "Caller verification"):
 * every provider's spelling by every transport, a spoofed trusted number,
 * strict mode (`PUT /me/settings`), and `caller_verification` in both lookups.
 */

type Fields = Record<string, string | boolean>;
type Transport = "GET" | "JSON POST" | "form POST";
const TRANSPORTS: Transport[] = ["GET", "JSON POST", "form POST"];

const text = (fields: Fields) => new URLSearchParams(Object.entries(fields).map(([k, v]) => [k, String(v)]));

function ask(transport: Transport, fields: Fields) {
  const token = fileTokens.telephony;
  if (transport === "GET") return call(`/apps/buzz/trust-lookup?${text(fields)}`, { token });
  if (transport === "JSON POST") return call("/apps/buzz/trust-lookup", { method: "POST", token, body: fields });
  return call("/apps/buzz/trust-lookup", {
    method: "POST",
    token,
    body: text(fields).toString(),
    headers: { "Content-Type": "application/x-www-form-urlencoded" },
  });
}

/** A trust-lookup's decision (every transport answers the one schema). */
const decision = (response: Response) => answer(response, 200, trustLookupGet);

const alice = DEMO.people.alice;
const bob = DEMO.people.bob;
let ALICE = "";
let BOB = "";
/** Acme's verified phone: both Alice and Bob (Acme members) trust it. */
const ACME = DEMO.acmePhone;
const STRANGER = "+16505550123";

beforeAll(async () => {
  const number = async (who: "alice" | "bob") => (await secureNumberOf(who)).e164;
  ALICE = await number("alice");
  BOB = await number("bob");
});

/** Each spelling, what `caller_verification` reads, and whether Acme's trusted number then rings. */
const VALUES: [string, Fields, string | null, boolean][] = [
  ["no verification field", {}, null, true],
  ["Twilio TN-Validation-Passed-A", { StirVerstat: "TN-Validation-Passed-A" }, "A", true],
  ["Twilio TN-Validation-Passed-B", { StirVerstat: "TN-Validation-Passed-B" }, "B", true],
  ["Twilio TN-Validation-Passed-C", { StirVerstat: "TN-Validation-Passed-C" }, "C", true],
  ["Twilio TN-Validation-Failed-A", { StirVerstat: "TN-Validation-Failed-A" }, "failed", false],
  ["Twilio TN-Validation-Failed-B", { StirVerstat: "TN-Validation-Failed-B" }, "failed", false],
  ["Twilio TN-Validation-Failed-C", { StirVerstat: "TN-Validation-Failed-C" }, "failed", false],
  ["Twilio No-TN-Validation", { StirVerstat: "No-TN-Validation" }, "none", true],
  ["SIP TN-Validation-Passed", { verstat: "TN-Validation-Passed" }, "A", true],
  ["SIP TN-Validation-Failed", { verstat: "TN-Validation-Failed" }, "failed", false],
  ["SIP No-TN-Validation", { verstat: "No-TN-Validation" }, "none", true],
  ["Telnyx A, validated", { shaken_stir_attestation: "A", shaken_stir_validated: "true" }, "A", true],
  ["Telnyx B, validated", { shaken_stir_attestation: "B", shaken_stir_validated: "true" }, "B", true],
  ["Telnyx C, validated", { shaken_stir_attestation: "C", shaken_stir_validated: "true" }, "C", true],
  ["Telnyx A, not validated", { shaken_stir_attestation: "A", shaken_stir_validated: "false" }, "failed", false],
  ["Telnyx without a level", { shaken_stir_validated: "true" }, "none", true],
  ["Telnyx A, validation absent", { shaken_stir_attestation: "A" }, "none", true],
  ["Telnyx A, validation empty", { shaken_stir_attestation: "A", shaken_stir_validated: "" }, "none", true],
  ["Telnyx A, validated no", { shaken_stir_attestation: "A", shaken_stir_validated: "no" }, "none", true],
  ["Telnyx A, validated 0", { shaken_stir_attestation: "A", shaken_stir_validated: "0" }, "none", true],
  ["an unreadable value", { StirVerstat: "maybe" }, "none", true],
];

describe("each verification value of each provider, by every transport", () => {
  for (const transport of TRANSPORTS) {
    it.each(VALUES)(`${transport}, %s`, async (_, verification, reads, trusted) => {
      expect(await decision(await ask(transport, { To: ALICE, From: ACME, ...verification }))).toEqual({
        trusted,
        user_id: alice,
        caller_verification: reads,
      });
    });
  }

  it("Telnyx's JSON booleans count like the strings", async () => {
    const fields = { To: ALICE, From: ACME, shaken_stir_attestation: "B", shaken_stir_validated: false };
    expect(await decision(await ask("JSON POST", fields))).toEqual({
      trusted: false,
      user_id: alice,
      caller_verification: "failed",
    });
  });

  it("a verification given twice: a failed one wins, two different passes read as none", async () => {
    const twice = (first: string, second: string) =>
      call(`/apps/buzz/trust-lookup?${text({ To: ALICE, From: ACME })}&StirVerstat=${first}&StirVerstat=${second}`, {
        token: fileTokens.telephony,
      });
    expect(await decision(await twice("TN-Validation-Passed-A", "TN-Validation-Failed-A"))).toEqual({
      trusted: false,
      user_id: alice,
      caller_verification: "failed",
    });
    expect(await decision(await twice("TN-Validation-Passed-A", "TN-Validation-Passed-C"))).toEqual({
      trusted: true,
      user_id: alice,
      caller_verification: "none",
    });
    // Two spellings at once: a failed one in either wins.
    const both = { To: ALICE, From: ACME, StirVerstat: "TN-Validation-Passed-A", shaken_stir_validated: "false" };
    expect(await decision(await ask("JSON POST", both))).toMatchObject({
      trusted: false,
      caller_verification: "failed",
    });
  });

  it("an untrusted caller stays untrusted whatever its level", async () => {
    const response = await ask("form POST", { To: ALICE, From: STRANGER, StirVerstat: "TN-Validation-Passed-A" });
    expect(await decision(response)).toEqual({ trusted: false, user_id: alice, caller_verification: "A" });
  });
});

/** Alice's newest blocked calls, as she sees them. */
async function blocked() {
  return answer(await as("alice").get("/apps/buzz/blocked"), 200, listBlocked);
}

/** Waits for a blocked call with `callerId` to be recorded (they are appended after the answer). */
async function blockedWith(callerId: string) {
  for (let i = 0; i < 80; i++) {
    const found = (await blocked()).find((call) => call.caller_id === callerId);
    if (found) return found;
    await scheduler.wait(25);
  }
  throw new Error(`no blocked call from ${callerId}`);
}

describe("a spoofed trusted number", () => {
  it("rings no more: trusted false, and its blocked call says verification failed", async () => {
    const spoofed = { To: ALICE, From: ACME, StirVerstat: "TN-Validation-Failed-A", caller_id: "SPOOFED ACME" };
    expect(await decision(await ask("form POST", spoofed))).toEqual({
      trusted: false,
      user_id: alice,
      caller_verification: "failed",
    });
    expect(await blockedWith("SPOOFED ACME")).toMatchObject({
      phone_number: ACME.slice(2),
      reason: "verification failed",
    });
  });

  it("an ordinary untrusted call's blocked call has no reason", async () => {
    await decision(await ask("GET", { To: ALICE, From: STRANGER, caller_id: "PLAIN STRANGER" }));
    expect((await blockedWith("PLAIN STRANGER")).reason).toBeNull();
  });

  it("call-lookup: the same field, and nothing about a caller whose verification failed", async () => {
    const query = (extra: string) =>
      `/apps/buzz/call-lookup?number_code=1&number=${ALICE.slice(2)}&inbound_code=1&inbound=${ACME.slice(2)}${extra}`;
    const verified = await call(query("&StirVerstat=TN-Validation-Passed-A"), { token: fileTokens.telephony });
    const details = await answer(verified, 200, callLookup);
    expect(details.caller_verification).toBe("A");
    expect(details.companies.map((company) => company.id)).toContain(DEMO.companies.acme);
    const spoofed = await call(query("&StirVerstat=TN-Validation-Failed-A"), { token: fileTokens.telephony });
    expect(await spoofed.json()).toEqual({ contacts: [], people: [], companies: [], caller_verification: "failed" });
    const unsaid = await call(query(""), { token: fileTokens.telephony });
    expect((await answer(unsaid, 200, callLookup)).caller_verification).toBeNull();
  });
});

describe("strict mode: PUT /me/settings {calls: verified_only}", () => {
  const lookup = (verification: Fields) => ask("form POST", { To: BOB, From: ACME, ...verification });

  it("is everyone by default, kept in the person's object, and back again", async () => {
    expect(await (await as("carol").get("/me/settings")).json()).toEqual({ calls: "everyone" });
    const strict = await as("carol").send("PUT", "/me/settings", { calls: "verified_only" });
    expect(strict.status).toBe(200);
    expect(await strict.json()).toEqual({ calls: "verified_only" });
    expect(await (await as("carol").get("/me/settings")).json()).toEqual({ calls: "verified_only" });
    const rows = await inPersonObject<{ calls: string }>(DEMO.people.carol, "SELECT calls FROM settings");
    expect(rows).toEqual([{ calls: "verified_only" }]);
    expect(await (await as("carol").send("PUT", "/me/settings", { calls: "everyone" })).json()).toEqual({
      calls: "everyone",
    });
  });

  it("only level A (or a SIP pass) rings, even a trusted caller; the rest are blocked as verification required", async () => {
    expect(await decision(await lookup({ StirVerstat: "TN-Validation-Passed-B" }))).toMatchObject({ trusted: true });
    expect((await as("bob").send("PUT", "/me/settings", { calls: "verified_only" })).status).toBe(200);
    // Written once a second has passed since the record's last write (src/db/kv-writes.ts).
    await indexKeysWritten(bob);
    // The receiver record in KV carries the choice: the lookup reads nothing else.
    const values = await personObject(bob).indexValues();
    expect(JSON.parse(values[`rcv:${BOB}`]!)).toMatchObject({ p: bob, vo: 1 });

    const cases: [Fields, boolean][] = [
      [{ StirVerstat: "TN-Validation-Passed-A" }, true],
      [{ verstat: "TN-Validation-Passed" }, true],
      [{ shaken_stir_attestation: "A", shaken_stir_validated: "true" }, true],
      // The audit's reproduction: an attestation nobody validated is no A, in every spelling of "not validated".
      [{ shaken_stir_attestation: "A" }, false],
      [{ shaken_stir_attestation: "A", shaken_stir_validated: "" }, false],
      [{ shaken_stir_attestation: "A", shaken_stir_validated: "0" }, false],
      [{ shaken_stir_attestation: "A", shaken_stir_validated: "no" }, false],
      [{ shaken_stir_attestation: "A", shaken_stir_validated: "null" }, false],
      [{ StirVerstat: "TN-Validation-Passed-B" }, false],
      [{ StirVerstat: "TN-Validation-Passed-C" }, false],
      [{ StirVerstat: "No-TN-Validation" }, false],
      [{}, false],
      [{ StirVerstat: "TN-Validation-Failed-A" }, false],
    ];
    for (const [verification, trusted] of cases) {
      expect(await decision(await lookup(verification)), JSON.stringify(verification)).toMatchObject({
        trusted,
        user_id: bob,
      });
    }
    // The same by JSON, where Telnyx's values are typed: null, 0 and an absent field are no validation.
    for (const validated of [null, 0, false, undefined]) {
      const body = { To: BOB, From: ACME, shaken_stir_attestation: "A", shaken_stir_validated: validated };
      const response = await call("/apps/buzz/trust-lookup", { method: "POST", token: fileTokens.telephony, body });
      expect(await decision(response), String(validated)).toMatchObject({
        trusted: false,
        caller_verification: validated === false ? "failed" : "none",
      });
    }
    await decision(await lookup({ StirVerstat: "TN-Validation-Passed-B", caller_id: "ACME AT B" }));
    let reason: unknown;
    for (let i = 0; i < 80 && reason === undefined; i++) {
      const calls = await answer(await as("bob").get("/apps/buzz/blocked"), 200, listBlocked);
      reason = calls.find((row) => row.caller_id === "ACME AT B")?.reason;
      if (reason === undefined) await scheduler.wait(25);
    }
    expect(reason).toBe("verification required");

    // A strict lookup stays on KV: warm, no D1 statement.
    await scheduler.wait(50);
    const d1 = countD1();
    for (let i = 0; i < 10; i++) {
      expect(await decision(await lookup({ StirVerstat: "TN-Validation-Passed-A" }))).toMatchObject({ trusted: true });
    }
    expect(d1.statements).toBe(0);

    expect((await as("bob").send("PUT", "/me/settings", { calls: "everyone" })).status).toBe(200);
    await indexKeysWritten(bob);
    expect(await decision(await lookup({ StirVerstat: "TN-Validation-Passed-B" }))).toMatchObject({ trusted: true });
  });

  it("refuses what it does not know, and callers who are not a person", async () => {
    await expectError(await as("carol").send("PUT", "/me/settings", { calls: "friends" }), 400, "Bad Request");
    await expectError(await as("carol").send("PUT", "/me/settings", { ring: "always" }), 400, "Bad Request");
    await expectError(await as("telephony").get("/me/settings"), 403, "Forbidden");
    await expectError(await call("/me/settings"), 401, "Unauthorized");
  });
});

describe("Telnyx's attestation counts only when validated (property)", () => {
  /** What Telnyx may send for each field: its own values, near misses, other types, any text; `absent`: no field. */
  const absent = Symbol("absent");
  const validatedValues = fc.oneof(
    fc.constantFrom<unknown>(true, false, "true", "false", "", 0, 1, "no", "yes", null, absent),
    fc.constantFrom<unknown>("TRUE", "True", " true ", "1", "FALSE", " false", "t", "validated", [], {}),
    fc.string({ maxLength: 8 }),
    fc.integer(),
  );
  const attestationValues = fc.oneof(
    fc.constantFrom<unknown>("A", "B", "C", "a", " b ", "c", "D", "AB", "", null, 0, true, absent),
    fc.string({ maxLength: 3 }),
  );
  const source = (attestation: unknown, validated: unknown) => {
    const fields: Record<string, unknown> = {};
    if (attestation !== absent) fields.shaken_stir_attestation = attestation;
    if (validated !== absent) fields.shaken_stir_validated = validated;
    return fields;
  };
  /** What the provider said, as text (JSON's booleans and numbers as they print); undefined: nothing readable. */
  const asText = (value: unknown) =>
    typeof value === "string" || typeof value === "boolean" || typeof value === "number" ? String(value) : undefined;

  it('a level reads only with shaken_stir_validated true (JSON true or "true"); false is failed; else none or null', () => {
    fc.assert(
      fc.property(attestationValues, validatedValues, (attestation, validated) => {
        const reading = callerVerificationOf(source(attestation, validated));
        const said = { attestation: asText(attestation)?.trim() ?? "", validated: asText(validated)?.trim() ?? "" };
        const level = said.attestation.toUpperCase();
        const expected =
          said.attestation === "" && said.validated === ""
            ? null
            : said.validated.toLowerCase() === "false"
              ? "failed"
              : said.validated === "true" && ["A", "B", "C"].includes(level)
                ? level
                : "none";
        expect(reading).toBe(expected);
      }),
      { seed: 3602, numRuns: 2000 },
    );
  });

  it("strict mode rings a Telnyx caller only when validated is true, from whichever source it came", () => {
    fc.assert(
      fc.property(attestationValues, validatedValues, fc.boolean(), (attestation, validated, inQuery) => {
        // The fields from the query string or the body (a later source wins), as trust-lookup reads them.
        const fields = source(attestation, validated);
        const reading = inQuery ? callerVerificationOf(fields, {}) : callerVerificationOf({}, fields);
        const rings = applyVerification(true, reading, "verified_only").trusted;
        if (rings)
          expect(validated === true || (typeof validated === "string" && validated.trim() === "true")).toBe(true);
      }),
      { seed: 3603, numRuns: 2000 },
    );
  });
});

describe("Telnyx Call Control's webhook", () => {
  const event = (payload: Record<string, unknown>) => ({
    data: { event_type: "call.initiated", id: "0ccc7b54-4df3-4bca-a65a-3da1ecc777f0", payload },
    meta: { attempt: 1, delivered_to: "https://api.example/apps/buzz/trust-lookup" },
  });

  it("reads payload.to and payload.from like To/From, with the verification", async () => {
    const trusted = event({
      call_control_id: "v3:abc",
      direction: "incoming",
      from: ACME,
      to: ALICE,
      state: "parked",
      shaken_stir_attestation: "A",
      shaken_stir_validated: true,
    });
    const response = await ask("JSON POST", trusted as unknown as Fields);
    expect(response.headers.get("Lookup-Problem")).toBeNull();
    expect(await decision(response)).toEqual({ trusted: true, user_id: alice, caller_verification: "A" });
    const spoofed = event({ from: ACME, to: ALICE, shaken_stir_attestation: "A", shaken_stir_validated: false });
    expect(await decision(await ask("JSON POST", spoofed as unknown as Fields))).toEqual({
      trusted: false,
      user_id: alice,
      caller_verification: "failed",
    });
    const untrusted = event({ from: STRANGER, to: ALICE });
    expect(await decision(await ask("JSON POST", untrusted as unknown as Fields))).toEqual({
      trusted: false,
      user_id: alice,
      caller_verification: null,
    });
  });

  /** Another event of one call, as Call Control posts it to the same URL. */
  const later = (event_type: string, payload: Record<string, unknown>) =>
    ({ data: { event_type, id: crypto.randomUUID(), payload }, meta: { attempt: 1 } }) as unknown as Fields;
  const blockedOf = async (who: "alice" | "bob") => answer(await as(who).get("/apps/buzz/blocked"), 200, listBlocked);

  it("a call's later events (answered, hung up) and its outgoing calls ask nothing and record no blocked call", async () => {
    const stranger = `+1303555${String(1000 + Math.floor(Math.random() * 8999))}`;
    const leg = { call_control_id: "v3:x", call_session_id: crypto.randomUUID(), from: stranger, to: ALICE };
    const initiated = await ask("JSON POST", event({ ...leg, direction: "incoming", state: "parked" }) as never);
    expect(await decision(initiated)).toEqual({ trusted: false, user_id: alice, caller_verification: null });
    // The integration rejects the call; Telnyx posts call.hangup, then (another call) an outgoing call.initiated.
    const ignored = { trusted: false, user_id: 0, caller_verification: null };
    const hangup = await ask("JSON POST", later("call.hangup", { ...leg, hangup_cause: "call_rejected" }));
    expect(hangup.headers.get("Lookup-Problem")).toBeNull();
    expect(await decision(hangup)).toEqual(ignored);
    const outgoing = event({ ...leg, call_session_id: crypto.randomUUID(), direction: "outgoing" });
    expect(await decision(await ask("JSON POST", outgoing as never))).toEqual(ignored);
    await new Promise((resolve) => setTimeout(resolve, 400));
    const rows = (await blockedOf("alice")).filter((row) => `+${row.country_code}${row.phone_number}` === stranger);
    expect(rows).toHaveLength(1); // one call, one blocked call
  });

  it("strict mode: an answered trusted call's later events are not recorded as 'verification required'", async () => {
    expect((await as("bob").send("PUT", "/me/settings", { calls: "verified_only" })).status).toBe(200);
    await indexKeysWritten(bob);
    try {
      const before = (await blockedOf("bob")).length;
      const leg = { call_control_id: "v3:y", call_session_id: crypto.randomUUID(), from: ACME, to: BOB };
      const initiated = event({
        ...leg,
        direction: "incoming",
        shaken_stir_attestation: "A",
        shaken_stir_validated: true,
      });
      expect(await decision(await ask("JSON POST", initiated as never))).toEqual({
        trusted: true,
        user_id: bob,
        caller_verification: "A",
      });
      await ask("JSON POST", later("call.answered", { ...leg, state: "answered" }));
      await ask("JSON POST", later("call.hangup", { ...leg, hangup_cause: "normal_clearing" }));
      await new Promise((resolve) => setTimeout(resolve, 400));
      expect((await blockedOf("bob")).length).toBe(before);
    } finally {
      await as("bob").send("PUT", "/me/settings", { calls: "everyone" });
    }
  });
});
