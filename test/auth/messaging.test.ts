import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it, inject, vi } from "vitest";
import { NotSent } from "../../src/services/messaging";
import { emailSender } from "../../src/services/messaging/email";
import { telnyxSms } from "../../src/services/messaging/telnyx";
import { twilioSms } from "../../src/services/messaging/twilio";
import { addMyPhone } from "../../src/routes/me/me.routes";
import { acmeEmployeeWithPhone, answer, as, codeSentTo, expectError } from "../helpers";

/*
 * The ways a code leaves (docs/security.md, "Codes"): each provider's request checked against its documented
 * shape (Twilio's own library as the oracle), and what a provider's failure does to the client's answer.
 */

afterEach(() => vi.restoreAllMocks());

/** Captures the request a sender makes, answering `answer`. */
function captureFetch(answer: () => Promise<Response> | Response) {
  const seen: Request[] = [];
  vi.spyOn(globalThis, "fetch").mockImplementation(async (input, init) => {
    seen.push(new Request(input as RequestInfo, init));
    return answer();
  });
  return seen;
}

async function twilioOracle(ask: Record<string, string>) {
  const response = await fetch(inject("twilioReference"), {
    method: "POST",
    body: JSON.stringify({ op: "message", ...ask }),
  });
  // Twilio's own library's answer (the oracle), not this API's: no route schema to read it with.
  return ((await response.json()) as { result: Record<string, unknown> }).result;
}

const ACCOUNT = { accountSid: "AC0123456789abcdef0123456789abcdef", authToken: "secret-auth-token" };

describe("Twilio's Messages API", () => {
  for (const from of ["+15005550006", "MG0123456789abcdef0123456789abcdef"]) {
    it(`sends what the twilio package sends (from ${from.slice(0, 2)}…)`, async () => {
      const message = { to: "+14155550199", body: "492817 is your verification code.\n\n@api.test #492817" };
      const expected = await twilioOracle({ ...ACCOUNT, from, ...message });
      const seen = captureFetch(() => new Response('{"sid":"SM1"}', { status: 201 }));
      await twilioSms({ ...ACCOUNT, from })({ channel: "sms", ...message });
      const [request] = seen;
      expect(request!.method).toBe(String(expected.method).toUpperCase());
      expect(request!.url).toBe(expected.uri);
      expect(request!.headers.get("Authorization")).toBe(
        `Basic ${btoa(`${expected.username as string}:${expected.password as string}`)}`,
      );
      expect(request!.headers.get("Content-Type")).toBe("application/x-www-form-urlencoded");
      expect(Object.fromEntries(new URLSearchParams(await request!.text()))).toEqual(expected.data);
    });
  }
});

describe("Telnyx's Messaging API", () => {
  it("POST /v2/messages with a Bearer key and a JSON body {from, to, text}", async () => {
    const seen = captureFetch(() => new Response("{}", { status: 200 }));
    await telnyxSms({ apiKey: "KEY0123", from: "+15005550006" })({ channel: "sms", to: "+14155550199", body: "hi" });
    const [request] = seen;
    expect(request!.method).toBe("POST");
    expect(request!.url).toBe("https://api.telnyx.com/v2/messages");
    expect(request!.headers.get("Authorization")).toBe("Bearer KEY0123");
    expect(request!.headers.get("Content-Type")).toBe("application/json");
    expect(await request!.json()).toEqual({ from: "+15005550006", to: "+14155550199", text: "hi" });
  });
});

describe("a provider's failure", () => {
  const send = () => telnyxSms({ apiKey: "k", from: "+15005550006" })({ channel: "sms", to: "+1", body: "x" });

  it("4xx is `refused`, 5xx and 429 `unavailable`, a timeout `unavailable`", async () => {
    captureFetch(() => new Response('{"errors":[{"detail":"invalid to"}]}', { status: 400 }));
    await expect(send()).rejects.toMatchObject({ kind: "refused", message: expect.stringContaining("400") });
    vi.restoreAllMocks();
    captureFetch(() => new Response("", { status: 503 }));
    await expect(send()).rejects.toMatchObject({ kind: "unavailable" });
    vi.restoreAllMocks();
    captureFetch(() => new Response("", { status: 429 }));
    await expect(send()).rejects.toMatchObject({ kind: "unavailable" });
    vi.restoreAllMocks();
    vi.spyOn(globalThis, "fetch").mockRejectedValue(new DOMException("timed out", "TimeoutError"));
    await expect(send()).rejects.toBeInstanceOf(NotSent);
  });

  it("the error code is read from the whole answer: a Telnyx refusal longer than 300 characters keeps it", async () => {
    const body = JSON.stringify({
      errors: [
        {
          code: "40310",
          title: "Invalid 'to' address",
          detail:
            "The 'to' address should be a valid E.164 formatted phone number, a valid short code, or a valid " +
            "alphanumeric sender ID where supported by the destination country and the messaging profile.",
          source: { pointer: "/to" },
          meta: { url: "https://developers.telnyx.com/docs/overview/errors/40310" },
        },
      ],
    });
    expect(body.length).toBeGreaterThan(300);
    captureFetch(() => new Response(body, { status: 400 }));
    await expect(send()).rejects.toMatchObject({ kind: "refused", message: "Telnyx answered 400 (error 40310)" });
  });

  it("over HTTP: 502 for a refusal, 503 for silence; the code already sent stays valid and nothing else is written", async () => {
    const number = "+16505552323";
    await acmeEmployeeWithPhone("fail", number);
    // Bob holds it too, so Bob proves it: first a code through the development outbox.
    const added = await as("bob").send("POST", "/me/phones", { phone: number });
    const { id } = await answer(added, 201, addMyPhone);
    expect((await as("bob").send("POST", `/me/phones/${id}/verification`)).status).toBe(202);
    const code = await codeSentTo(number);

    // The deployment now sends through Twilio, which refuses, then does not answer.
    const saved = { ...env };
    Object.assign(env, {
      SMS_PROVIDER: "twilio",
      TWILIO_ACCOUNT_SID: ACCOUNT.accountSid,
      TWILIO_AUTH_TOKEN: ACCOUNT.authToken,
      TWILIO_FROM: "+15005550006",
    });
    try {
      const rows = async () =>
        (await env.DB.prepare("select count(*) as n from one_time_codes where address = ? and code_hash is not null")
          .bind(number)
          .first<{ n: number }>())!.n;
      const before = await rows();
      // Twilio's real answer quotes the number it refused: the log keeps the answer, the number masked.
      captureFetch(
        () =>
          new Response(`{"code":21211,"message":"The 'To' number ${number} is not a valid phone number."}`, {
            status: 400,
          }),
      );
      const logged: string[] = [];
      vi.spyOn(console, "error").mockImplementation((...args: unknown[]) => void logged.push(args.join(" ")));
      const refused = await as("bob").send("POST", `/me/phones/${id}/verification`);
      const line = logged.find((text) => text.includes("a code was not sent"));
      expect(line).toContain("is not a valid phone number");
      expect(line).not.toContain(number);
      expect(line).not.toContain(number.slice(2));
      // The provider and its error code, never its own words (they can name the deployment's sender).
      expect(await expectError(refused, 502, "Bad Gateway")).toBe(
        "Bad Gateway: the code could not be sent: Twilio answered 400 (error 21211)",
      );
      vi.restoreAllMocks();
      vi.spyOn(globalThis, "fetch").mockRejectedValue(new DOMException("timed out", "TimeoutError"));
      expect((await as("bob").send("POST", `/me/phones/${id}/verification`)).status).toBe(503);
      vi.restoreAllMocks();
      expect(await rows()).toBe(before + 2);
    } finally {
      for (const key of ["SMS_PROVIDER", "TWILIO_ACCOUNT_SID", "TWILIO_AUTH_TOKEN", "TWILIO_FROM"]) {
        (env as unknown as Record<string, unknown>)[key] = (saved as Record<string, unknown>)[key];
      }
    }
    // The newest code is the one whose message failed; the client asks again and proves the phone.
    expect((await as("bob").send("POST", `/me/phones/${id}/verification`)).status).toBe(202);
    const again = await as("bob").send("POST", `/me/phones/${id}/confirm`, { code: await codeSentTo(number) });
    expect(again.status).toBe(200);
    expect(code).toMatch(/^\d{6}$/);
  });
});

describe("Cloudflare Email Service", () => {
  it("sends {from, to, subject, text} through the binding; its failure is `unavailable`", async () => {
    const sent: unknown[] = [];
    const binding = { send: async (message: unknown) => void sent.push(message) } as unknown as SendEmail;
    await emailSender(binding, "codes@example.com")({ channel: "email", to: "bob@acme.example", body: "492817 is…" });
    expect(sent).toEqual([
      { from: "codes@example.com", to: "bob@acme.example", subject: "Your verification code", text: "492817 is…" },
    ]);
    const failing = { send: async () => Promise.reject(new Error("destination not verified")) } as unknown as SendEmail;
    await expect(
      emailSender(failing, "codes@example.com")({ channel: "email", to: "x@y.example", body: "b" }),
    ).rejects.toMatchObject({ kind: "unavailable" });
  });
});
