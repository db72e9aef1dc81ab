/**
 * Twilio's own library as a reference the tests ask (vitest globalSetup, run
 * in Node): the `twilio` package needs Node's crypto, which the Worker's
 * runtime (and so the test pool) does not load without `nodejs_compat`. A
 * loopback server signs and validates with `getExpectedTwilioSignature` /
 * `validateRequest` / `getExpectedBodyHash` and builds TwiML with
 * `VoiceResponse`; tests reach it through `inject("twilioReference")`.
 */
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import type { TestProject } from "vitest/node";
import twilio from "twilio";

type Ask =
  | { op: "sign"; authToken: string; url: string; params: Record<string, string | string[]> }
  | { op: "validate"; authToken: string; signature: string; url: string; params: Record<string, string | string[]> }
  | { op: "validateWithBody"; authToken: string; signature: string; url: string; body: string }
  | { op: "bodyHash"; body: string }
  | { op: "twiml"; dial?: { client?: string; number?: string }; reject?: boolean }
  | { op: "message"; accountSid: string; authToken: string; to: string; from: string; body: string };

/** The request Twilio's client would send for `messages.create` (its transport replaced, nothing sent). */
async function messageRequest(ask: Extract<Ask, { op: "message" }>) {
  let seen: unknown = null;
  const httpClient = {
    request: async (opts: Record<string, unknown>) => {
      seen = { method: opts.method, uri: opts.uri, username: opts.username, password: opts.password, data: opts.data };
      return { statusCode: 201, body: { sid: "SM0000", status: "queued" }, headers: {} };
    },
  };
  const client = twilio(ask.accountSid, ask.authToken, { httpClient: httpClient as never });
  const sender = ask.from.startsWith("MG") ? { messagingServiceSid: ask.from } : { from: ask.from };
  await client.messages.create({ to: ask.to, body: ask.body, ...sender });
  return seen;
}

async function answer(ask: Ask): Promise<unknown> {
  switch (ask.op) {
    case "message":
      return messageRequest(ask);
    case "sign":
      return twilio.getExpectedTwilioSignature(ask.authToken, ask.url, ask.params);
    case "validate":
      return twilio.validateRequest(ask.authToken, ask.signature, ask.url, ask.params);
    case "validateWithBody":
      return twilio.validateRequestWithBody(ask.authToken, ask.signature, ask.url, ask.body);
    case "bodyHash":
      return twilio.getExpectedBodyHash(ask.body);
    case "twiml": {
      const response = new twilio.twiml.VoiceResponse();
      if (ask.dial?.client) response.dial().client(ask.dial.client);
      if (ask.dial?.number) response.dial().number(ask.dial.number);
      if (ask.reject) response.reject({ reason: "rejected" });
      return response.toString();
    }
  }
}

export default async function setup(project: TestProject) {
  const server = createServer((request, response) => {
    let text = "";
    request.on("data", (chunk: Buffer) => (text += chunk.toString("utf8")));
    request.on("end", () => {
      answer(JSON.parse(text) as Ask).then(
        (result) => response.writeHead(200, { "Content-Type": "application/json" }).end(JSON.stringify({ result })),
        (err: unknown) => response.writeHead(400).end(String(err)),
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  project.provide("twilioReference", `http://127.0.0.1:${(server.address() as AddressInfo).port}`);
  return () => new Promise<void>((resolve) => server.close(() => resolve()));
}

declare module "vitest" {
  export interface ProvidedContext {
    twilioReference: string;
  }
}
