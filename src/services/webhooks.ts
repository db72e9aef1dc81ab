import { and, asc, eq, sql } from "drizzle-orm";
import { companies, webhooks } from "../db/schema";
import { refusal, type Answer } from "../lib/answer";
import { endpointProblem } from "../lib/outbound-url";
import { iso } from "../lib/time";
import type { EventName } from "../domain/events";
import { WriteBatch } from "./outbox";
import type { Deps } from "./deps";

type WebhookRow = typeof webhooks.$inferSelect;

/**
 * The API's Webhook (OpenAPI component `Webhook`); the secret is returned with it
 * (docs/decisions.md, "Webhook create").
 */
export const toWebhook = (row: WebhookRow) => ({
  id: row.id,
  endpoint: row.endpoint,
  event: row.event,
  active: row.active,
  secret: row.secret,
  disabled_reason: row.disabledReason,
  created_at: iso(row.createdAt)!,
  updated_at: iso(row.updatedAt)!,
});

export const SECRET_PREFIX = "whsec_";
const SECRET_BYTES = 32;

/** `whsec_` + base64 of 32 random bytes, the Standard Webhooks secret form. */
export function newWebhookSecret(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(SECRET_BYTES));
  return SECRET_PREFIX + btoa(String.fromCharCode(...bytes));
}

export const MAX_ENDPOINT_LENGTH = 2048;
/** Each event fans out to every subscribed webhook in one batch, so a company has at most this many. */
export const MAX_WEBHOOKS_PER_COMPANY = 50;
/** How long deliveries stay signed with the secret a rotation replaced. */
export const ROTATION_OVERLAP_MS = 24 * 3600 * 1000;

export async function listWebhooks({ db }: Deps, companyId: number) {
  const rows = await db.select().from(webhooks).where(eq(webhooks.companyId, companyId)).orderBy(asc(webhooks.id));
  return rows.map(toWebhook);
}

type Webhook = ReturnType<typeof toWebhook>;

const noWebhook = (id: number) => refusal(404, `webhook ${id} does not exist`);

/** The company's webhook `id`, or a 404 refusal. */
export async function getWebhook({ db }: Deps, companyId: number, id: number): Promise<Answer<{ webhook: Webhook }>> {
  const row = await db
    .select()
    .from(webhooks)
    .where(and(eq(webhooks.companyId, companyId), eq(webhooks.id, id)))
    .get();
  return row ? { ok: true, webhook: toWebhook(row) } : noWebhook(id);
}

/**
 * Creates the webhook unless its endpoint is refused (docs/decisions.md,
 * "Webhooks": a 400) or the company already has 50: one INSERT … SELECT
 * guarded by the count, so concurrent requests cannot pass the limit
 * together (a 400 at the limit).
 */
export async function createWebhook(
  deps: Deps,
  companyId: number,
  input: { endpoint: string; event: EventName; active: boolean },
): Promise<Answer<{ webhook: Webhook }>> {
  const { db } = deps;
  const problem = endpointProblem(input.endpoint, deps.environment);
  if (problem) return refusal(400, `invalid body: \`endpoint\` ${problem}`);
  const batch = new WriteBatch(deps);
  const now = batch.now.getTime();
  const count = sql`(select count(*) from ${webhooks} where ${webhooks.companyId} = ${companyId})`;
  const insert = batch.add(
    db
      .insert(webhooks)
      .select(
        db
          // drizzle wants every column, in the table's order.
          .select({
            id: sql<number>`null`.as("id"),
            companyId: companies.id,
            endpoint: sql<string>`${input.endpoint}`.as("endpoint"),
            event: sql<string>`${input.event}`.as("event"),
            active: sql<boolean>`${input.active ? 1 : 0}`.as("active"),
            secret: sql<string>`${newWebhookSecret()}`.as("secret"),
            previousSecret: sql<string | null>`null`.as("previous_secret"),
            previousSecretExpiresAt: sql<Date | null>`null`.as("previous_secret_expires_at"),
            disabledReason: sql<string | null>`null`.as("disabled_reason"),
            failingSince: sql<Date | null>`null`.as("failing_since"),
            createdAt: sql<Date>`${now}`.as("created_at"),
            updatedAt: sql<Date>`${now}`.as("updated_at"),
          })
          .from(companies)
          .where(and(eq(companies.id, companyId), sql`${count} < ${MAX_WEBHOOKS_PER_COMPANY}`)),
      )
      .returning(),
  );
  const [row] = (await batch.commit()).results[insert] as WebhookRow[];
  if (!row) return refusal(400, `a company can have at most ${MAX_WEBHOOKS_PER_COMPANY} webhooks; delete one first`);
  return { ok: true, webhook: toWebhook(row) };
}

/** What a PATCH may change; absent fields stay. */
export type WebhookChanges = { active?: boolean; endpoint?: string; event?: EventName };

/**
 * PATCH: `active`, `endpoint` and `event` (docs/decisions.md, "Webhooks").
 * Setting `active` clears why the service had switched it off, and switching
 * on clears its failing clock; a new endpoint or event leaves both alone.
 * A new endpoint is checked as at creation; switching on re-checks the
 * endpoint it will have (one registered before a rule was tightened stays
 * off): a 400. One UPDATE; a 404 when the company has no such webhook.
 */
export async function updateWebhook(
  deps: Deps,
  companyId: number,
  id: number,
  changes: WebhookChanges,
): Promise<Answer<{ webhook: Webhook }>> {
  const { active, endpoint, event } = changes;
  if (endpoint !== undefined) {
    const problem = endpointProblem(endpoint, deps.environment);
    if (problem) return refusal(400, `invalid body: \`endpoint\` ${problem}`);
  } else if (active) {
    const current = await getWebhook(deps, companyId, id);
    if (!current.ok) return current;
    const problem = endpointProblem(current.webhook.endpoint, deps.environment);
    if (problem) return refusal(400, `webhook ${id} cannot be activated: its endpoint ${problem}`);
  }
  const batch = new WriteBatch(deps);
  const update = batch.add(
    deps.db
      .update(webhooks)
      .set({
        ...(endpoint === undefined ? {} : { endpoint }),
        ...(event === undefined ? {} : { event }),
        ...(active === undefined ? {} : { active, disabledReason: null }),
        ...(active ? { failingSince: null } : {}),
        updatedAt: batch.now,
      })
      .where(and(eq(webhooks.companyId, companyId), eq(webhooks.id, id)))
      .returning(),
  );
  const [row] = (await batch.commit()).results[update] as WebhookRow[];
  return row ? { ok: true, webhook: toWebhook(row) } : noWebhook(id);
}

/**
 * A new secret; the one it replaces keeps signing deliveries (as a second
 * signature) for 24 h, so receivers can switch without losing a message.
 * A 404 when the company has no such webhook.
 */
export async function rotateSecret(
  deps: Deps,
  companyId: number,
  id: number,
  now = new Date(),
): Promise<Answer<{ webhook: Webhook }>> {
  const batch = new WriteBatch(deps, now);
  const update = batch.add(
    deps.db
      .update(webhooks)
      .set({
        previousSecret: sql`${webhooks.secret}`,
        previousSecretExpiresAt: new Date(now.getTime() + ROTATION_OVERLAP_MS),
        secret: newWebhookSecret(),
        updatedAt: now,
      })
      .where(and(eq(webhooks.companyId, companyId), eq(webhooks.id, id)))
      .returning(),
  );
  const [row] = (await batch.commit()).results[update] as WebhookRow[];
  return row ? { ok: true, webhook: toWebhook(row) } : noWebhook(id);
}

/** Permanent; the company's history of it stays (its rows lose the link). A 404 when there was none. */
export async function deleteWebhook(deps: Deps, companyId: number, id: number): Promise<Answer> {
  const batch = new WriteBatch(deps);
  const deletion = batch.add(
    deps.db
      .delete(webhooks)
      .where(and(eq(webhooks.companyId, companyId), eq(webhooks.id, id)))
      .returning({ id: webhooks.id }),
  );
  return ((await batch.commit()).results[deletion] as unknown[]).length > 0 ? { ok: true } : noWebhook(id);
}
