import { drizzle } from "drizzle-orm/d1";
import * as schema from "./schema";

/**
 * The one way to get a database handle: HTTP middleware, the queue consumer,
 * the cron handler and the seed all call this.
 */
export const createDb = (d1: D1Database) => drizzle(d1, { schema });

export type Db = ReturnType<typeof createDb>;
export { schema };
