import { generateKeyPairSync } from "node:crypto";
import path from "node:path";
import { cloudflareTest, readD1Migrations } from "@cloudflare/vitest-plugin";
import { defineConfig } from "vitest/config";

const root = path.resolve(import.meta.dirname, "..");

/**
 * Tests run inside workerd against real local D1, KV, Queues and rate
 * limiters configured from wrangler.toml. The drizzle-kit migrations are
 * handed to the setup file, which applies them per test file.
 */
/**
 * drizzle-kit's migrations bundle for the person objects imports `.sql` files
 * as text; wrangler does that by a `[[rules]]` entry, Vite by this plugin.
 */
const sqlText = {
  name: "sql-text",
  transform(code: string, id: string) {
    return id.endsWith(".sql") ? { code: `export default ${JSON.stringify(code)};`, map: null } : null;
  },
};

/**
 * The push services' keys (src/secrets.d.ts), made afresh for each run (no private key is kept in the
 * repository): a VAPID pair, a service account of FCM's shape with an RSA key, an APNs P-256 key.
 * The tests read the public halves back from the private keys.
 */
function pushSecrets() {
  const vapid = generateKeyPairSync("ec", { namedCurve: "prime256v1" }).privateKey.export({ format: "jwk" });
  const point = Buffer.concat([
    Buffer.from([4]),
    Buffer.from(vapid.x!, "base64url"),
    Buffer.from(vapid.y!, "base64url"),
  ]);
  const pkcs8 = (key: ReturnType<typeof generateKeyPairSync>["privateKey"]) =>
    key.export({ format: "pem", type: "pkcs8" }).toString();
  return {
    VAPID_PUBLIC_KEY: point.toString("base64url"),
    VAPID_PRIVATE_KEY: vapid.d!,
    VAPID_SUBJECT: "mailto:push-test@example.com",
    FCM_SERVICE_ACCOUNT: JSON.stringify({
      type: "service_account",
      project_id: "privacy-test",
      private_key_id: "test-key-1",
      private_key: pkcs8(generateKeyPairSync("rsa", { modulusLength: 2048 }).privateKey),
      client_email: "push@privacy-test.iam.gserviceaccount.com",
      token_uri: "https://oauth2.googleapis.com/token",
    }),
    APNS_KEY: pkcs8(generateKeyPairSync("ec", { namedCurve: "prime256v1" }).privateKey),
    APNS_KEY_ID: "TESTKEY123",
    APNS_TEAM_ID: "TESTTEAM12",
  };
}

export default defineConfig(async () => ({
  root,
  plugins: [
    sqlText,
    cloudflareTest({
      wrangler: { configPath: path.join(root, "wrangler.toml") },
      miniflare: {
        bindings: {
          TEST_MIGRATIONS: await readD1Migrations(path.join(root, "drizzle")),
          // The Worker's keys (src/secrets.d.ts); fixed for the tests, generated for `npm run dev`.
          CODE_KEY: "dGVzdC1jb2RlLWtleS10ZXN0LWNvZGUta2V5LTMyYnl0ZXM",
          STREAM_TICKET_KEY: "dGVzdC10aWNrZXQta2V5LXRlc3QtdGlja2V0LWtleS0zMg",
          PROVIDER_SECRET_KEYS: "t1:dGVzdC1wcm92aWRlci1rZXktdGVzdC1wcm92aWRlci0z",
          ...pushSecrets(),
        },
        // Tests run the webhook and background consumers themselves
        // (`exports.default.queue`; `deliverPending` in test/webhook-receiver.ts):
        // these producers point at queues nobody consumes. Left to Miniflare's
        // automatic consumers, work enqueued by a file's commits ran during its
        // teardown, and such files never finished (reproduced: the run hung).
        queueProducers: {
          WEBHOOK_QUEUE: { queueName: "test-sink-webhooks" },
          BACKGROUND_QUEUE: { queueName: "test-sink-background" },
          USES_QUEUE: { queueName: "test-sink-uses" },
        },
      },
    }),
  ],
  test: {
    include: ["test/**/*.test.ts"],
    setupFiles: ["test/setup.ts"],
    // The logs of passing tests (the failures many of them provoke on purpose) are not printed:
    // a green run reads as one (a failing test still shows its logs).
    silent: "passed-only" as const,
    // Twilio's own library, in Node, for the tests of signed requests and TwiML answers; a Web Push
    // receiver that decrypts with `http_ece` and checks VAPID (and `web-push` as a reference sender).
    globalSetup: ["test/support/twilio-reference.ts", "test/support/web-push-receiver.ts"],
    // Generous bounds: CI has two cores and each file boots its own workerd.
    testTimeout: 30_000,
    hookTimeout: 60_000,
  },
}));
