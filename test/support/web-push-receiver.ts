/**
 * A Web Push service and browser in one, for the tests (vitest globalSetup, run in Node): it makes
 * subscriptions (a P-256 key pair and an auth secret, as a browser does), takes pushes on their
 * endpoints (loopback http, which the Worker may reach in development), and for each push checks the
 * VAPID header (RFC 8292: the JWT's ES256 signature with the key `k`, its claims) and decrypts the
 * body with `http_ece` (RFC 8291 `aes128gcm`), the library `web-push` itself encrypts with. It also
 * asks `web-push`'s `generateRequestDetails` for the request the reference sender would make.
 *
 * - `POST /subscriptions` `{"answers": [503, 410, …]}` → `{"endpoint", "keys": {"p256dh", "auth"}}`: a
 *   new subscription whose pushes are answered with these statuses in turn, then 201;
 * - `POST /push/<id>`: a push (what the Worker sends);
 * - `GET /push/<id>` → every push received there, oldest first (`Received` below);
 * - `POST /reference` `{"subscription", "payload", "vapid", "ttl", "urgency", "topic"}` → web-push's request.
 * Tests reach it through `inject("webPushReceiver")`.
 */
import { createECDH, createPublicKey, randomBytes, randomUUID, verify, type ECDH } from "node:crypto";
import { createServer, type IncomingMessage } from "node:http";
import type { AddressInfo } from "node:net";
import type { TestProject } from "vitest/node";
// @ts-expect-error: http_ece ships no types (its API: decrypt(buffer, { version, privateKey, authSecret })).
import ece from "http_ece";
// @ts-expect-error: web-push ships no types (its API: generateRequestDetails(subscription, payload, options)).
import webpush from "web-push";

/** One push as the receiver saw it. */
export type Received = {
  status: number;
  headers: Record<string, string>;
  /** The decrypted payload; null when it did not decrypt (`error` says why). */
  payload: string | null;
  /** Whether the VAPID JWT's signature verified with the header's `k`, and its header and claims. */
  vapid: { verified: boolean; k: string; header: Record<string, unknown>; claims: Record<string, unknown> } | null;
  error: string | null;
};

type Subscription = { ecdh: ECDH; auth: string; answers: number[]; received: Received[] };

const subscriptions = new Map<string, Subscription>();

function readBody(request: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", () => resolve(Buffer.concat(chunks)));
    request.on("error", reject);
  });
}

/** `vapid t=<jwt>, k=<key>` checked: the JWT's ES256 signature with `k`, its header and claims. */
function checkVapid(authorization: string | undefined): Received["vapid"] {
  const match = /^vapid t=([^,\s]+),\s*k=([A-Za-z0-9_-]+)$/.exec(authorization ?? "");
  if (!match) return null;
  const [, jwt, k] = match as unknown as [string, string, string];
  const [header, claims, signature] = jwt.split(".") as [string, string, string];
  const point = Buffer.from(k, "base64url");
  const key = createPublicKey({
    key: {
      kty: "EC",
      crv: "P-256",
      x: point.subarray(1, 33).toString("base64url"),
      y: point.subarray(33, 65).toString("base64url"),
    },
    format: "jwk",
  });
  const verified = verify(
    "sha256",
    Buffer.from(`${header}.${claims}`),
    { key, dsaEncoding: "ieee-p1363" },
    Buffer.from(signature, "base64url"),
  );
  const json = (part: string) => JSON.parse(Buffer.from(part, "base64url").toString("utf8")) as Record<string, unknown>;
  return { verified, k, header: json(header), claims: json(claims) };
}

function receive(subscription: Subscription, request: IncomingMessage, body: Buffer): Received {
  const status = subscription.answers.shift() ?? 201;
  const headers = Object.fromEntries(
    Object.entries(request.headers).map(([name, value]) => [name, Array.isArray(value) ? value.join(", ") : value!]),
  );
  let payload: string | null = null;
  let error: string | null = null;
  try {
    const plain = ece.decrypt(body, {
      version: "aes128gcm",
      privateKey: subscription.ecdh,
      authSecret: subscription.auth,
    }) as Buffer;
    payload = plain.toString("utf8");
  } catch (err) {
    error = String(err);
  }
  let vapid: Received["vapid"] = null;
  try {
    vapid = checkVapid(headers.authorization);
  } catch (err) {
    error ??= `VAPID: ${String(err)}`;
  }
  const received = { status, headers, payload, vapid, error };
  subscription.received.push(received);
  return received;
}

type ReferenceAsk = {
  subscription: { endpoint: string; keys: { p256dh: string; auth: string } };
  payload: string;
  vapid: { subject: string; publicKey: string; privateKey: string };
  ttl: number;
  urgency?: string;
  topic?: string;
};

function reference(ask: ReferenceAsk) {
  const details = webpush.generateRequestDetails(ask.subscription, ask.payload, {
    vapidDetails: ask.vapid,
    TTL: ask.ttl,
    ...(ask.urgency ? { urgency: ask.urgency } : {}),
    ...(ask.topic ? { topic: ask.topic } : {}),
  }) as { endpoint: string; method: string; headers: Record<string, string | number>; body: Buffer };
  return { ...details, body: details.body.toString("base64") };
}

export default async function setup(project: TestProject) {
  let base = "";
  const server = createServer((request, response) => {
    const reply = (status: number, value?: unknown) => {
      response.writeHead(status, value === undefined ? {} : { "Content-Type": "application/json" });
      response.end(value === undefined ? undefined : JSON.stringify(value));
    };
    readBody(request).then(
      (body) => {
        const path = request.url ?? "/";
        if (request.method === "POST" && path === "/subscriptions") {
          const ask = (body.length ? JSON.parse(body.toString("utf8")) : {}) as { answers?: number[] };
          const id = randomUUID();
          const ecdh = createECDH("prime256v1");
          ecdh.generateKeys();
          const auth = randomBytes(16).toString("base64url");
          subscriptions.set(id, { ecdh, auth, answers: [...(ask.answers ?? [])], received: [] });
          return reply(200, {
            endpoint: `${base}/push/${id}`,
            keys: { p256dh: ecdh.getPublicKey().toString("base64url"), auth },
          });
        }
        if (request.method === "POST" && path === "/reference") {
          return reply(200, reference(JSON.parse(body.toString("utf8")) as ReferenceAsk));
        }
        const push = /^\/push\/([\w-]+)$/.exec(path);
        const subscription = push ? subscriptions.get(push[1]!) : undefined;
        if (!subscription) return reply(404);
        if (request.method === "GET") return reply(200, subscription.received);
        if (request.method === "POST") return reply(receive(subscription, request, body).status);
        return reply(405);
      },
      (err: unknown) => reply(500, { error: String(err) }),
    );
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  project.provide("webPushReceiver", base);
  return () => new Promise<void>((resolve) => server.close(() => resolve()));
}

declare module "vitest" {
  export interface ProvidedContext {
    webPushReceiver: string;
  }
}
