import { index, integer, sqliteTable, text } from "drizzle-orm/sqlite-core";
import { timestamp } from "./columns";

/**
 * The one-time move of each person's own rows (activity, blocked calls) from
 * D1 into their Durable Object (services/person-moves.ts): one row per
 * person, with where the move stands and the counts it compared. No foreign
 * key: the record of a move outlives nothing it needs.
 */
export const personMoves = sqliteTable(
  "person_moves",
  {
    personId: integer("person_id").primaryKey(),
    /** `pending` → `moved` (counts matched) or `mismatch` (they did not: the operator looks). */
    state: text("state", { enum: ["pending", "moved", "mismatch"] }).notNull(),
    /** Rows of this person in D1 and in the object (D1 ids) when the move finished. */
    d1Rows: integer("d1_rows"),
    objectRows: integer("object_rows"),
    updatedAt: timestamp("updated_at").notNull(),
  },
  (t) => [index("person_moves_state_idx").on(t.state)],
);

/**
 * People whose account is gone and whose object still has to be erased:
 * written in the batch that deletes the account, removed once the object
 * answered; the minute sweep retries what is left (services/person-objects.ts).
 */
export const personErasures = sqliteTable("person_erasures", {
  personId: integer("person_id").primaryKey(),
  dueAt: timestamp("due_at").notNull(),
});
