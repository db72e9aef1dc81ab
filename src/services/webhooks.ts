import { and, asc, eq } from "drizzle-orm";
import type { Db } from "../db/client";
import { webhooks } from "../db/schema";
import { iso } from "../lib/time";
import type { EventName } from "./events";

type WebhookRow = typeof webhooks.$inferSelect;

/** The Webhook of [seed 2.17]; the secret is returned with it (DECISIONS §6). */
export const toWebhook = (row: WebhookRow) => ({
  id: row.id,
  endpoint: row.endpoint,
  event: row.event,
  active: row.active,
  secret: row.secret,
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

const LOOPBACK_HOSTS =
  /^(localhost|.+\.localhost|127(\.\d{1,3}){3}|\[::1?\]|\[::ffff:127(\.\d{1,3}){3}\]|0\.0\.0\.0)$/i;

/**
 * Why `endpoint` cannot receive deliveries, or null when it can
 * (DECISIONS §6): an absolute `https://` URL without credentials; in
 * `development` also `http://` and loopback hosts.
 */
export function endpointProblem(endpoint: string, environment: string): string | null {
  const development = environment === "development";
  let url: URL;
  try {
    url = new URL(endpoint);
  } catch {
    return "must be an absolute URL such as https://hooks.example.com/privacy";
  }
  if (url.protocol !== "https:" && !(development && url.protocol === "http:")) {
    return development ? "must be an http:// or https:// URL" : "must be an https:// URL";
  }
  if (url.username || url.password) return "must not contain credentials (user:password@)";
  if (!development && LOOPBACK_HOSTS.test(url.hostname)) return "must not point at a loopback host";
  return null;
}

export async function listWebhooks(db: Db, companyId: number) {
  const rows = await db.select().from(webhooks).where(eq(webhooks.companyId, companyId)).orderBy(asc(webhooks.id));
  return rows.map(toWebhook);
}

export async function getWebhook(db: Db, companyId: number, id: number) {
  const row = await db
    .select()
    .from(webhooks)
    .where(and(eq(webhooks.companyId, companyId), eq(webhooks.id, id)))
    .get();
  return row ? toWebhook(row) : null;
}

export async function createWebhook(
  db: Db,
  companyId: number,
  input: { endpoint: string; event: EventName; active: boolean },
) {
  const now = new Date();
  const [row] = await db
    .insert(webhooks)
    .values({ companyId, ...input, secret: newWebhookSecret(), createdAt: now, updatedAt: now })
    .returning();
  return toWebhook(row!);
}

/** PATCH: only `active` moves (seed §3). Returns null when the company has no such webhook. */
export async function setWebhookActive(db: Db, companyId: number, id: number, active: boolean) {
  const [row] = await db
    .update(webhooks)
    .set({ active, updatedAt: new Date() })
    .where(and(eq(webhooks.companyId, companyId), eq(webhooks.id, id)))
    .returning();
  return row ? toWebhook(row) : null;
}

/** Permanent; the company's history of it stays (its rows lose the link). False when there was none. */
export async function deleteWebhook(db: Db, companyId: number, id: number) {
  const deleted = await db
    .delete(webhooks)
    .where(and(eq(webhooks.companyId, companyId), eq(webhooks.id, id)))
    .returning({ id: webhooks.id });
  return deleted.length > 0;
}
