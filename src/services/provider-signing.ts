import { and, eq, isNull, sql } from "drizzle-orm";
import { accessTokens } from "../db/schema";
import { sealContext, type ProviderSigning, type StoredSigning } from "../domain/provider-signing";
import { badRequest, notFound } from "../lib/errors";
import { telnyxKey } from "../lib/provider-signatures";
import { WriteBatch } from "./outbox";
import type { Deps } from "./deps";
import { forgetVerifiedToken } from "./tokens";

/** A provider token's signing state as the operator sees it: never the secret. */
export type SigningState = { token_id: number; kind: "twilio" | "telnyx" | null };

/**
 * Sets (null: clears) a provider token's signing configuration
 * (docs/providers.md, "Signed requests"). Only an active service token with
 * scope `calls:lookup` has one (anything else is 404); a Telnyx key must be
 * a 32-byte Ed25519 public key (400); a Twilio auth token is stored sealed
 * under `PROVIDER_SECRET_KEYS` (services/provider-secrets.ts; 503 without
 * it). One read, then one D1 batch (the change and its record's index work);
 * the token's cached verification is forgotten here at once and everywhere within 60 s.
 */
export async function setProviderSigning(
  deps: Deps,
  tokenId: number,
  signing: ProviderSigning | null,
): Promise<SigningState> {
  if (signing?.kind === "telnyx" && !(await telnyxKey(signing.publicKey)))
    throw badRequest("`public_key` must be the account's Ed25519 public key: 32 bytes in base64, as Telnyx shows it");
  // The auth token is sealed before anything is written (a missing PROVIDER_SECRET_KEYS: 503, nothing stored).
  const stored: StoredSigning | null =
    signing?.kind === "twilio"
      ? { kind: "twilio", sealed: await deps.providerKeys.seal(signing.authToken, sealContext(tokenId)) }
      : signing;
  const provider = and(
    eq(accessTokens.id, tokenId),
    isNull(accessTokens.personId),
    isNull(accessTokens.revokedAt),
    sql`exists (select 1 from json_each(${accessTokens.scopes}) where value = 'calls:lookup')`,
  );
  const missing = () =>
    notFound(`token ${tokenId} is not an active provider token (a service token with scope \`calls:lookup\`)`);
  const token = await deps.db.select({ hash: accessTokens.tokenHash }).from(accessTokens).where(provider).get();
  if (!token) throw missing();
  // The token's verification record is marked stale in the same batch, so a configuration D1 holds always
  // reaches the record every server verifies from (by the commit's index work, else the sweep).
  const batch = new WriteBatch(deps);
  const update = batch.add(
    deps.db.update(accessTokens).set({ signing: stored }).where(provider).returning({ hash: accessTokens.tokenHash }),
  );
  batch.markStaleTokens([token.hash]);
  const { results } = await batch.commit();
  const [row] = results[update] as { hash: string }[];
  if (!row) throw missing();
  await forgetVerifiedToken(deps, row.hash);
  return { token_id: tokenId, kind: signing?.kind ?? null };
}
