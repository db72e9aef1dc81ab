/*
 * A company's webhook history (docs/webhooks.md, "History, attempts, test and resend"): shared by
 * the services that read and write it and the company's object that keeps the finished entries
 * (objects/company/). D1 holds an entry while it is on its way; once finished it is handed to the
 * company's object (services/webhook-delivery/archive.ts).
 */

/**
 * How long a finished delivery is kept after it finished (docs/decisions.md, "Retention"): a success
 * 3 days (the receiver has it; the history is for looking into what was just sent), a failure 30
 * days (time to see it, fix the endpoint and resend).
 */
export const HISTORY_RETENTION_DAYS = { success: 3, failed: 30 } as const;

export type HistoryFilter = { start?: Date; end?: Date; types?: string[] };

/** One attempt of a history entry, as D1 recorded it. */
export type HistoryAttempt = { at: Date; result: string; durationMs: number };

/** A finished delivery on its way from D1 to its company's object, with its attempts. */
export type FinishedDelivery = {
  id: string;
  /** Its place in D1 (rowid): entries of one millisecond keep D1's order. */
  seq: number;
  webhookId: number | null;
  event: string;
  /** The body's JSON text, as D1 stores it (what crosses to the object is text, not a parsed value). */
  payload: string;
  status: "success" | "failed";
  result: string;
  attempts: number;
  deliveredAt: Date | null;
  createdAt: Date;
  finishedAt: Date;
  attemptRows: HistoryAttempt[];
};

/** A history entry as either store holds it (its attempts apart). */
export type HistoryRow = Omit<FinishedDelivery, "attemptRows" | "status" | "finishedAt"> & {
  status: "pending" | "dispatched" | "success" | "failed";
};
