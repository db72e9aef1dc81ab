import { desc } from "drizzle-orm";
import type { DrizzleSqliteDODatabase } from "drizzle-orm/durable-sqlite";
import * as book from "./contacts";
import * as keys from "./index-keys";
import { lastId } from "./feed";
import { trustRequests } from "./schema";
import { companySettings } from "./trust";

/* What the heartbeat reads in a person's object (services/heartbeat). */

/**
 * What the heartbeat reads here (times in ms, or null): the newest activity
 * id, when someone last asked for trust, the newest contact change, the
 * newest company setting, the companies set to `trusted`, and the facts D1
 * last told the object that the heartbeat needs (null: none yet, D1 answers).
 */
export function heartbeatTimes(db: DrizzleSqliteDODatabase): {
  lastActivityId: number;
  trustRequest: number | null;
  contact: number | null;
  companySetting: number | null;
  trustedCompanies: number[];
  facts: keys.HeartbeatFacts | null;
} {
  const asked = db
    .select({ at: trustRequests.updatedAt })
    .from(trustRequests)
    .orderBy(desc(trustRequests.updatedAt))
    .limit(1)
    .get();
  const settings = companySettings(db);
  return {
    lastActivityId: lastId(db),
    trustRequest: asked ? asked.at.getTime() : null,
    contact: book.lastContactUpdate(db),
    companySetting: settings.length === 0 ? null : Math.max(...settings.map((row) => row.updatedAt)),
    trustedCompanies: settings.filter((row) => row.trust === "trusted").map((row) => row.companyId),
    facts: keys.heartbeatFacts(db),
  };
}
