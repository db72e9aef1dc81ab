import { integer } from "drizzle-orm/sqlite-core";

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
