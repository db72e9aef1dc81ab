import { and, eq } from "drizzle-orm";
import type { DrizzleSqliteDODatabase } from "drizzle-orm/durable-sqlite";
import { readFacts } from "./index-keys";
import { contactValues, personTrust, trustedBy } from "./schema";
import type { Sender } from "./api";

/*
 * Who a chat comes from, as the receiving object judges it (docs/decisions.md,
 * "The receiving budget"): chats from people who know the receiver, and from
 * the receiver's contacts, are not counted against the budget strangers share.
 */

/**
 * Whether `sender` is no stranger to this object's person: they share a
 * company, either trusted the other, or the sender's secure number is one of
 * this person's contact phones. All read from this object's own tables.
 */
export function isAcquainted(db: DrizzleSqliteDODatabase, sender: Sender): boolean {
  const mine = readFacts(db)?.companies ?? [];
  if (sender.companies.some((id) => mine.includes(id))) return true;
  const trusted = (table: typeof personTrust | typeof trustedBy) =>
    db
      .select({ id: table.personId })
      .from(table)
      .where(and(eq(table.personId, sender.personId), eq(table.trusted, true)))
      .get() !== undefined;
  if (trusted(trustedBy) || trusted(personTrust)) return true;
  if (sender.e164 === null) return false;
  return (
    db
      .select({ id: contactValues.contactId })
      .from(contactValues)
      .where(and(eq(contactValues.kind, "phone"), eq(contactValues.value, sender.e164)))
      .get() !== undefined
  );
}
