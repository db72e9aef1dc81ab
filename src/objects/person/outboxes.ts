import { logError } from "../../lib/log";

/*
 * The object's outboxes (trust requests on their way, mirrors of decisions):
 * each queued row is delivered to the person it is for, and taken off the
 * queue only once delivered; a failure is logged and left for the alarm.
 */

/**
 * Delivers every row at once (`deliver` sends it and takes it off its
 * queue); a failure is logged with `failure` and the row's person. Answers
 * whether one failed (it stays queued: the caller brings the alarm forward).
 */
export async function deliverEach<Row extends { personId: number }>(
  rows: Row[],
  deliver: (row: Row) => Promise<void>,
  failure: string,
): Promise<boolean> {
  const failed = await Promise.all(
    rows.map(async (row) => {
      try {
        await deliver(row);
        return false;
      } catch (err) {
        logError(failure, err, { personId: row.personId });
        return true;
      }
    }),
  );
  return failed.some(Boolean);
}
