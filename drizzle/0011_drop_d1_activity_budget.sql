-- The daily activity budget moved into each person's Durable Object (drizzle-person/), where requests
-- for one person run one at a time: the D1 counters and their batch guard (0009) are no longer used.
DROP TABLE `activity_days`;--> statement-breakpoint
ALTER TABLE `batch_guards` DROP COLUMN `activity_budget`;