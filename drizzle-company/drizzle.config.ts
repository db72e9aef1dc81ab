import { defineConfig } from "drizzle-kit";

/**
 * Migrations of the tables inside each company's Durable Object. drizzle-kit
 * bundles them in migrations.js, which the object applies when it starts
 * (https://orm.drizzle.team/docs/connect-cloudflare-do); wrangler.toml imports
 * the .sql files as text.
 */
export default defineConfig({
  dialect: "sqlite",
  driver: "durable-sqlite",
  schema: "./src/objects/company/schema.ts",
  out: "./drizzle-company",
});
