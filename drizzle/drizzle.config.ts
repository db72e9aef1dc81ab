import { defineConfig } from "drizzle-kit";

/**
 * drizzle-kit writes SQL migrations into this folder, which is also
 * wrangler's `migrations_dir`: `wrangler d1 migrations apply` runs them
 * (https://orm.drizzle.team/docs/connect-cloudflare-d1).
 */
export default defineConfig({
  dialect: "sqlite",
  schema: "./src/db/schema/index.ts",
  out: "./drizzle",
});
