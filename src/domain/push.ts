import { z } from "@hono/zod-openapi";
import { fromBase64url } from "../lib/crypto";
import { whenAbsent } from "../lib/openapi";
import type { ActivityType } from "./activity";

/*
 * Push (docs/app.md, "Push"): where a device is woken when it has no open stream, and what a push
 * says. Shared by the route that registers a device (`PUT /me/devices/{id}/push`), the person's
 * object that keeps the registrations and decides whom to wake, and the `background` queue's push job
 * that sends it. A push carries no content: `{"type", "id"}` only (docs/security.md, "Push").
 */

/** What a push announces; each type is its own collapse key (a newer push of a type replaces an older one). */
export const pushTypes = ["chat", "trust_request", "missed_call"] as const;
export type PushType = (typeof pushTypes)[number];

/** The chats that wake a device: a message or a reaction (a read indicator waits until the app opens). */
export const wakingChats: readonly ActivityType[] = ["chat_message", "chat_reaction_emoji"];

/** What a push says: the type and the id of what arrived (a chat's activity id; the others' own ids). */
export type PushEvent = { type: PushType; id: number };

/** Bytes of base64url text, or null when it is not base64url. */
function bytesOf(text: string): Uint8Array | null {
  if (!/^[A-Za-z0-9_-]+={0,2}$/.test(text)) return null;
  try {
    return fromBase64url(text);
  } catch {
    return null;
  }
}

const base64urlOf = (bytes: number, what: string, check: (b: Uint8Array) => boolean = () => true) =>
  z
    .string()
    .max(128)
    .refine(
      (text) => {
        const b = bytesOf(text);
        return b !== null && b.length === bytes && check(b);
      },
      { message: `must be ${what}` },
    );

export const WebPushTarget = z
  .object({
    kind: z.literal("webpush"),
    subscription: z
      .object({
        endpoint: z
          .string()
          .trim()
          .min(1)
          .max(2048)
          .openapi({
            description:
              "The push service's URL for this browser (`PushSubscription.endpoint`): https, on a public host " +
              "(http://127.0.0.1 and other local hosts only in development)",
            format: "uri",
            example: "https://fcm.googleapis.com/fcm/send/cXs3dExampleToken",
          }),
        keys: z.object({
          p256dh: base64urlOf(65, "base64url of an uncompressed P-256 point (65 bytes)", (b) => b[0] === 4).openapi({
            description: "The browser's ECDH public key (`getKey('p256dh')`), base64url",
            example: "BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4",
          }),
          auth: base64urlOf(16, "base64url of 16 bytes").openapi({
            description: "The subscription's authentication secret (`getKey('auth')`), base64url",
            example: "BTBZMqHH6r4Tts7J_aSIgg",
          }),
        }),
        expirationTime: z.number().nullable().optional().openapi({
          description: "Ignored: `PushSubscription.toJSON()` may be sent as it is",
        }),
      })
      .transform(({ endpoint, keys }) => ({ endpoint, keys: { p256dh: keys.p256dh, auth: keys.auth } })),
  })
  .openapi("WebPushRegistration", {
    description: "A browser's Push API subscription (RFC 8030, encrypted per RFC 8291, VAPID per RFC 8292)",
  });

export const FcmTarget = z
  .object({
    kind: z.literal("fcm"),
    token: z
      .string()
      .min(16)
      .max(4096)
      .regex(/^[A-Za-z0-9_:.-]+$/, { message: "must be an FCM registration token" })
      .openapi({ description: "The app's FCM registration token", example: "eH0fLhuiRj2Np7UQ-opXAm:APA91bGtC-wH4s" }),
  })
  .openapi("FcmRegistration", { description: "An Android (or any FCM) app, through FCM HTTP v1" });

export const ApnsTarget = z
  .object({
    kind: z.literal("apns"),
    token: z
      .string()
      .regex(/^[0-9a-fA-F]{64,200}$/, { message: "must be an APNs device token (hex)" })
      .transform((token) => token.toLowerCase())
      .openapi({
        description: "The device token APNs gave the app, as hex",
        example: "a9d0ed10e9cfd022a61cb08753f49c5a0b0dfb383697bf9f9d750a1003da19c7",
      }),
    topic: z
      .string()
      .min(1)
      .max(255)
      .regex(/^[A-Za-z0-9.-]+$/, { message: "must be the app's bundle id" })
      .openapi({ description: "The app's bundle id (`apns-topic`)", example: "com.example.privacy" }),
    sandbox: whenAbsent(z.boolean(), false).openapi({
      description: "The development environment of APNs (a debug build's token); false when absent",
      example: false,
    }),
  })
  .openapi("ApnsRegistration", { description: "An iOS app, through APNs with a token-based provider key" });

/** Where a device is woken: one of the three kinds, as registered. */
export const PushTarget = z.discriminatedUnion("kind", [WebPushTarget, FcmTarget, ApnsTarget]);
export type PushTarget = z.output<typeof PushTarget>;

/** A registration as the person's object keeps it: the device (token id), where, since when (ms). */
export type PushRegistration = { deviceId: number; target: PushTarget; updatedAt: number };

/**
 * Where a target's pushes go, whichever account registered it: the push service's token or endpoint.
 * Two accounts signed in one after the other on one app install register the same address.
 */
export function addressOf(target: PushTarget): string {
  return JSON.stringify([target.kind, target.kind === "webpush" ? target.subscription.endpoint : target.token]);
}

/** The one text of a target (its fields in one order): how the object tells a registration is still the same. */
export function targetKey(target: PushTarget): string {
  switch (target.kind) {
    case "webpush":
      return JSON.stringify([
        target.kind,
        target.subscription.endpoint,
        target.subscription.keys.p256dh,
        target.subscription.keys.auth,
      ]);
    case "fcm":
      return JSON.stringify([target.kind, target.token]);
    case "apns":
      return JSON.stringify([target.kind, target.token, target.topic, target.sandbox]);
  }
}

/**
 * A push on its way (a message of the `background` queue, domain/queue-messages.ts): one device, one
 * event. `at` is when the event arrived (ms): a push that keeps failing is retried only within
 * `PUSH_RETRY_MS` of it.
 */
export const PushJob = z.object({
  kind: z.literal("push"),
  personId: z.number().int().positive(),
  deviceId: z.number().int().positive(),
  target: PushTarget,
  event: z.object({ type: z.enum(pushTypes), id: z.number().int().min(0) }),
  at: z.number().int().min(0),
});
export type PushJob = z.output<typeof PushJob>;

/**
 * How long a push is retried (backoff 1 s doubling to 60 s): past this it is dropped and logged — a
 * push only wakes the app, what arrived waits in the feed. Short of the `background` consumer's last
 * retry (wrangler.toml), so a push never reaches the dead-letter queue.
 */
export const PUSH_RETRY_MS = 4 * 60_000;

/** How long a push service keeps an undelivered push for a device that is off (seconds). */
export const PUSH_TTL_SECONDS = 24 * 60 * 60;
