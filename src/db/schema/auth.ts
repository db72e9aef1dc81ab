import { sql } from "drizzle-orm";
import { index, integer, sqliteTable, text, uniqueIndex, type AnySQLiteColumn } from "drizzle-orm/sqlite-core";
import { createdAt, id, timestamp } from "./columns";
import { people } from "./people";
import type { StoredSigning } from "../../domain/provider-signing";

/**
 * Bearer tokens. Only the SHA-256 hex of a token is stored (docs/decisions.md);
 * `prefix` keeps its first characters so an operator can tell tokens apart.
 * A token belongs to a person or to a named service with scopes.
 */
export const accessTokens = sqliteTable(
  "access_tokens",
  {
    id: id(),
    tokenHash: text("token_hash").notNull(),
    prefix: text("prefix").notNull(),
    personId: integer("person_id").references(() => people.id, { onDelete: "cascade" }),
    serviceName: text("service_name"),
    scopes: text("scopes", { mode: "json" }).$type<string[]>().notNull().default([]),
    expiresAt: timestamp("expires_at"),
    revokedAt: timestamp("revoked_at"),
    lastUsedAt: timestamp("last_used_at"),
    /**
     * A provider token's signing configuration (docs/providers.md, "Signed requests"); null: none. A Twilio
     * auth token is stored sealed (domain/provider-signing.ts).
     */
    signing: text("signing", { mode: "json" }).$type<StoredSigning>(),
    /**
     * The device a person signed in on (`POST /auth/tokens`, docs/app.md "Devices"); null for a token
     * the operator minted, listed as `minted by the operator`.
     */
    deviceName: text("device_name"),
    /**
     * The device token a container session (scope `vcc`) was minted with: it never outlives it (revoked
     * with it, expiring no later; docs/consent.md). Null for every other token.
     */
    parentTokenId: integer("parent_token_id").references((): AnySQLiteColumn => accessTokens.id, {
      onDelete: "cascade",
    }),
    createdAt: createdAt(),
  },
  (t) => [
    uniqueIndex("access_tokens_hash_uq").on(t.tokenHash),
    index("access_tokens_person_idx").on(t.personId),
    // The few tokens with a signing configuration, for the minute's sealing and rotation job
    // (services/provider-secrets.ts) to read without scanning every token.
    index("access_tokens_signed_idx")
      .on(t.id)
      .where(sql`${t.signing} is not null`),
    // The container sessions of a device, revoked with it.
    index("access_tokens_parent_idx")
      .on(t.parentTokenId)
      .where(sql`${t.parentTokenId} is not null`),
  ],
);
