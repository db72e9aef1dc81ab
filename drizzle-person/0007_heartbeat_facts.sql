ALTER TABLE `facts` ADD `country_code` text;--> statement-breakpoint
ALTER TABLE `facts` ADD `number` text;--> statement-breakpoint
ALTER TABLE `facts` ADD `user_at` integer;--> statement-breakpoint
ALTER TABLE `facts` ADD `membership_at` integer;