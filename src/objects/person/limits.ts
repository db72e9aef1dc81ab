/*
 * What one person's object keeps and allows (docs/decisions.md): plain
 * values, so the Worker's services can name them without loading the object.
 */

/** What a person may record per UTC day (docs/security.md, "What a stranger can cost"). */
export const ACTIVITY_BUDGET = { records: 1_000, textBytes: 10 * 1024 * 1024 } as const;

/**
 * What a person may receive per UTC day from people who do not know them, all such senders
 * together (chats): one sender's full budget. Chats from people who know them (a shared company,
 * trust either way) or from their contacts are not counted. Past it a stranger's chat is a 429
 * and nothing is written on either side.
 */
export const STRANGERS_BUDGET = { records: 1_000, textBytes: 10 * 1024 * 1024 } as const;

/** Trust requests a person may send per UTC day, matched or not. */
export const MAX_TRUST_REQUESTS_PER_DAY = 100;

/** Contacts a person may keep (docs/decisions.md). */
export const MAX_CONTACTS = 10_000;

/**
 * Kept per person: the newest 1,000 blocked calls, 90 days of them, 365 days of activity,
 * deleted contacts' tombstones for 90 days, and trust requests for 365 days after they were
 * last asked (the decision itself is kept as long as the person). What it heard of another person
 * (`peers`: their names and companies) goes 365 days after it last heard, when no activity of
 * theirs is left to name (a page asks their object again if one is). A device revoked or expired
 * goes 30 days after that: by then its token's own record refuses it without the object.
 */
export const KEEP = {
  blockedCalls: 1_000,
  blockedCallDays: 90,
  activityDays: 365,
  tombstoneDays: 90,
  trustRequestDays: 365,
  peerDays: 365,
  endedDeviceDays: 30,
} as const;

export { DAY_MS, utcDay } from "../../lib/time";
import { DAY_MS, utcDay } from "../../lib/time";
/** Seconds from `ms` until the next UTC day starts (the `Retry-After` of a spent daily budget). */
export const secondsToNextDay = (ms: number) => Math.ceil(((utcDay(ms) + 1) * DAY_MS - ms) / 1000);

/**
 * How long the person's object keeps a link of their contacts (links.ts) as the trust index named
 * it: a page within this bound reads it from the object instead of KV. 60 s, the time KV itself
 * may take to show a write everywhere (docs/architecture.md, "Contacts link through the index").
 */
export const LINKS_FRESH_MS = 60_000;

/** At most this many contact values' links are kept (the oldest go first): a page of 100 contacts has about 200. */
export const LINKS_KEPT = 5_000;
