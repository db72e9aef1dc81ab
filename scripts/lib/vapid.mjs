// A VAPID key pair for Web Push (RFC 8292; docs/app.md, "Push"), as the Worker's secrets take it:
// the public key as browsers subscribe with it (base64url of the uncompressed P-256 point, 65 bytes)
// and the private key (base64url of the 32-byte scalar). Made offline with Node's crypto.
import { generateKeyPairSync } from "node:crypto";

export function vapidKeyPair() {
  const jwk = generateKeyPairSync("ec", { namedCurve: "prime256v1" }).privateKey.export({ format: "jwk" });
  const point = Buffer.concat([Buffer.from([4]), Buffer.from(jwk.x, "base64url"), Buffer.from(jwk.y, "base64url")]);
  return { publicKey: point.toString("base64url"), privateKey: jwk.d };
}
