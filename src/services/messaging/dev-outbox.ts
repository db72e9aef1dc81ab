import { desc, eq, sql } from "drizzle-orm";
import type { Db } from "../../db/client";
import { devOutbox } from "../../db/schema";
import type { Deps } from "../deps";
import type { Sender } from "./message";

/**
 * The development outbox (docs/app.md, "Signing in"): where SMS and email go when no provider is
 * configured under `npm run dev` and in the tests. Each message is printed in the dev log and kept in
 * D1 for `GET /internal/outbox` and `npm run admin -- outbox`. Never used in production.
 */
const OUTBOX_KEEP = 1_000;

export const devOutboxSender =
  (db: Db): Sender =>
  async ({ channel, to, body }) => {
    await db.insert(devOutbox).values({ channel, to, body });
    // The outbox keeps the newest `OUTBOX_KEEP` messages.
    await db.run(sql`delete from ${devOutbox} where id <= (select max(id) from ${devOutbox}) - ${OUTBOX_KEEP}`);
    console.log(`[outbox] ${channel} to ${to}: ${body.replaceAll("\n", " / ")}`);
  };

export type OutboxEntry = { to: string; channel: "sms" | "email"; body: string; created_at: string };

/** The outbox, newest first, at most `limit` (`to`: one address only). */
export async function readOutbox({ db }: Deps, to: string | undefined, limit: number): Promise<OutboxEntry[]> {
  const rows = await db
    .select()
    .from(devOutbox)
    .where(to === undefined ? undefined : eq(devOutbox.to, to))
    .orderBy(desc(devOutbox.id))
    .limit(limit)
    .all();
  return rows.map((row) => ({
    to: row.to,
    channel: row.channel,
    body: row.body,
    created_at: row.createdAt.toISOString(),
  }));
}
