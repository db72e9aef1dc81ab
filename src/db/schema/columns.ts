import { type AnySQLiteColumn, integer } from "drizzle-orm/sqlite-core";

/**
 * Column helpers shared by every table. Timestamps are stored as integer
 * milliseconds since the epoch (sortable, cheap to compare in SQL) and read
 * back as `Date`; the API serializes them with `toISOString()`.
 */
export const id = () => integer("id").primaryKey({ autoIncrement: true });

export const timestamp = (name: string) => integer(name, { mode: "timestamp_ms" });

export const createdAt = () =>
  timestamp("created_at")
    .notNull()
    .$defaultFn(() => new Date());

export const updatedAt = () =>
  timestamp("updated_at")
    .notNull()
    .$defaultFn(() => new Date())
    .$onUpdateFn(() => new Date());

export const flag = (name: string) => integer(name, { mode: "boolean" });

/**
 * A required reference to another row that goes when that row goes: most of
 * the model hangs off a person or a company this way.
 */
export const cascadeRef = (name: string, target: () => AnySQLiteColumn) =>
  integer(name).notNull().references(target, { onDelete: "cascade" });
