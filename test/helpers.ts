import { exports } from "cloudflare:workers";
import { expect } from "vitest";
import { DEMO } from "../src/db/demo-world";
import { fileTokens, type Who } from "./principals";

export { DEMO };

export type CallOptions = {
  method?: string;
  token?: string;
  body?: unknown;
  headers?: Record<string, string>;
};

/** Calls the Worker like a client would, through its fetch handler. */
export function call(path: string, { method = "GET", token, body, headers = {} }: CallOptions = {}) {
  const init: RequestInit = { method, headers: { ...headers } };
  const h = init.headers as Record<string, string>;
  // Real traffic always carries the client address; a fresh one per call keeps
  // unauthenticated tests from sharing one per-IP rate-limit budget.
  h["CF-Connecting-IP"] ??= `198.51.100.${Math.floor(Math.random() * 250) + 1}`;
  if (token) h.Authorization = `Bearer ${token}`;
  if (body !== undefined) {
    init.body = typeof body === "string" ? body : JSON.stringify(body);
    h["Content-Type"] ??= "application/json";
  }
  return exports.default.fetch(new Request(`http://api.test${path}`, init));
}

/** `as("alice").get("/companies/1")`: calls as one of the demo principals (with this file's token). */
export function as(who: Who) {
  const token = fileTokens[who];
  return {
    get: (path: string, options: CallOptions = {}) => call(path, { ...options, token }),
    send: (method: string, path: string, body?: unknown, options: CallOptions = {}) =>
      call(path, { ...options, method, body, token }),
  };
}

/** Asserts the contract's error body and status; returns the message. */
export async function expectError(response: Response, status: number, phrase: string): Promise<string> {
  expect(response.status).toBe(status);
  expect(response.headers.get("Content-Type")).toMatch(/^application\/json/);
  const body = (await response.json()) as { error: { code: string; message: string } };
  expect(Object.keys(body)).toEqual(["error"]);
  expect(body.error.code).toBe(String(status));
  expect(body.error.message.startsWith(`${phrase}: `)).toBe(true);
  expect(body.error.message.length).toBeGreaterThan(phrase.length + 10);
  return body.error.message;
}

/** Inserts an access token directly, for token states the demo world lacks. */
export async function insertToken(
  token: string,
  fields: { personId?: number; serviceName?: string; scopes?: string[]; expiresAt?: Date; revokedAt?: Date },
) {
  const { env } = await import("cloudflare:workers");
  const { createDb } = await import("../src/db/client");
  const { accessTokens } = await import("../src/db/schema");
  const { sha256Hex } = await import("../src/lib/crypto");
  await createDb(env.DB)
    .insert(accessTokens)
    .values({ tokenHash: await sha256Hex(token), prefix: token.slice(0, 8), ...fields });
}
