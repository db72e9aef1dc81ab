import type { SigningRef } from "./provider-signing";

/** Who is calling, resolved from the bearer token (docs/decisions.md). */
export type Principal =
  /** `scope: "vcc"`: a container-scoped token, valid only on /apps/vcc/* (docs/decisions.md). */
  | {
      kind: "person";
      tokenId: number;
      personId: number;
      scope?: "vcc";
      /** When the token expires (ms); absent: never. A live stream closes then (docs/realtime.md). */
      expiresAt?: number;
      /**
       * The device the token is (name null: minted by the operator; `createdAt` ms), for the person's object
       * to adopt it at its first check (objects/person/devices.ts); absent in records written before.
       */
      device?: { name: string | null; createdAt: number };
    }
  /**
   * `signing`: a provider token's signing configuration; its requests must be signed (docs/providers.md).
   * Twilio's auth token only sealed: a principal is written to KV with the token's record.
   */
  | { kind: "service"; tokenId: number; service: string; scopes: string[]; signing?: SigningRef };
