import { drizzle } from "drizzle-orm/d1";

/**
 * The one way to get a database handle: HTTP middleware, the queue consumer,
 * the cron handler and the seed all call this. Built per request (a request's
 * D1 session is its own), so it is built without the schema: drizzle would
 * otherwise derive its relational-query config from every table on each call
 * (about an eighth of a warm trust-lookup's CPU time, measured), and this
 * codebase writes its queries with the query builder, never `db.query.*`.
 */
export const createDb = (d1: D1Database) => drizzle(d1);

export type Db = ReturnType<typeof createDb>;
