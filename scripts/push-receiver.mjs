// `node scripts/push-receiver.mjs [--port 8790] [--api http://127.0.0.1:8787]`: a small local Web Push receiver, a browser's part
// of Web Push without a browser (docs/app.md, "Push"). It makes a subscription (a P-256 key pair and
// an auth secret), prints the body of `PUT /me/devices/{id}/push` that registers it, then prints each
// push it receives, decrypted with `http_ece` (RFC 8291 aes128gcm), with its VAPID claims checked
// (RFC 8292) and how long after the previous line it came. Only for `npm run dev`: the endpoint is
// http on 127.0.0.1, which only a development deployment pushes to. Stop it with Ctrl-C.
import { createECDH, createPublicKey, randomBytes, verify } from "node:crypto";
import { createServer } from "node:http";
import ece from "http_ece";
import { parseArgs } from "./lib/cli.mjs";

const { flags } = parseArgs(process.argv.slice(2), {
  options: ["port", "api"],
  usage: 'Usage: node scripts/push-receiver.mjs [--port 8790] [--api http://127.0.0.1:8787] (docs/app.md, "Push")',
});
const port = Number(flags.port ?? 8790);
const ecdh = createECDH("prime256v1");
ecdh.generateKeys();
const auth = randomBytes(16).toString("base64url");
const endpoint = `http://127.0.0.1:${port}/push`;
const api = String(flags.api ?? "http://127.0.0.1:8787").replace(/\/+$/, "");

/** The VAPID header's JWT: its claims, and whether its ES256 signature verifies with its `k`. */
function vapidOf(header = "") {
  const match = /^vapid t=([^,\s]+),\s*k=([A-Za-z0-9_-]+)$/.exec(header);
  if (!match) return { verified: false };
  const [head, claims, signature] = match[1].split(".");
  const point = Buffer.from(match[2], "base64url");
  const key = createPublicKey({
    key: {
      kty: "EC",
      crv: "P-256",
      x: point.subarray(1, 33).toString("base64url"),
      y: point.subarray(33).toString("base64url"),
    },
    format: "jwk",
  });
  const data = Buffer.from(`${head}.${claims}`);
  const verified = verify("sha256", data, { key, dsaEncoding: "ieee-p1363" }, Buffer.from(signature, "base64url"));
  return { verified, ...JSON.parse(Buffer.from(claims, "base64url").toString("utf8")) };
}

const server = createServer((request, response) => {
  const chunks = [];
  request.on("data", (chunk) => chunks.push(chunk));
  request.on("end", () => {
    if (request.method !== "POST" || request.url !== "/push") return response.writeHead(404).end();
    const at = new Date();
    let payload;
    try {
      payload = JSON.parse(
        ece.decrypt(Buffer.concat(chunks), { version: "aes128gcm", privateKey: ecdh, authSecret: auth }).toString(),
      );
    } catch (err) {
      payload = { error: `not decrypted: ${err.message}` };
    }
    const { verified, aud, sub, exp } = vapidOf(request.headers.authorization);
    console.log(
      JSON.stringify({
        received_at: at.toISOString(),
        payload,
        topic: request.headers.topic,
        ttl: request.headers.ttl,
        vapid: { verified, aud, sub, expires: exp ? new Date(exp * 1000).toISOString() : null },
      }),
    );
    response.writeHead(201).end();
  });
});

server.listen(port, "127.0.0.1", () => {
  const body = { kind: "webpush", subscription: { endpoint, keys: { p256dh: ecdh.getPublicKey("base64url"), auth } } };
  console.error(`Listening on ${endpoint}. Register it for a device (its id from GET /me/devices):`);
  console.error(
    `  curl -s -X PUT -H 'Authorization: Bearer pk_…' -H 'Content-Type: application/json' \\\n` +
      `    ${api}/me/devices/<id>/push -d '${JSON.stringify(body)}'`,
  );
  console.error("Each push received is printed below, decrypted.");
});
for (const signal of ["SIGINT", "SIGTERM"]) process.on(signal, () => server.close(() => process.exit(0)));
