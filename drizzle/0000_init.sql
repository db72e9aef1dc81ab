CREATE TABLE `access_tokens` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`token_hash` text NOT NULL,
	`prefix` text NOT NULL,
	`person_id` integer,
	`service_name` text,
	`scopes` text DEFAULT '[]' NOT NULL,
	`expires_at` integer,
	`revoked_at` integer,
	`last_used_at` integer,
	`created_at` integer NOT NULL,
	FOREIGN KEY (`person_id`) REFERENCES `people`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE UNIQUE INDEX `access_tokens_hash_uq` ON `access_tokens` (`token_hash`);--> statement-breakpoint
CREATE INDEX `access_tokens_person_idx` ON `access_tokens` (`person_id`);--> statement-breakpoint
CREATE TABLE `activities` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`type` text NOT NULL,
	`sendable_type` text NOT NULL,
	`sendable_id` integer NOT NULL,
	`receivable_type` text NOT NULL,
	`receivable_id` integer NOT NULL,
	`call_time` integer DEFAULT 0 NOT NULL,
	`message` text,
	`message_id` text,
	`created_at` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `activities_sendable_idx` ON `activities` (`sendable_type`,`sendable_id`,`id`);--> statement-breakpoint
CREATE INDEX `activities_receivable_idx` ON `activities` (`receivable_type`,`receivable_id`,`id`);--> statement-breakpoint
CREATE UNIQUE INDEX `activities_message_uq` ON `activities` (`sendable_type`,`sendable_id`,`message_id`);--> statement-breakpoint
CREATE TABLE `blocked_calls` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`person_id` integer NOT NULL,
	`caller_id` text,
	`country_code` text NOT NULL,
	`phone_number` text NOT NULL,
	`created_at` integer NOT NULL,
	FOREIGN KEY (`person_id`) REFERENCES `people`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `blocked_calls_person_created_idx` ON `blocked_calls` (`person_id`,`created_at`);--> statement-breakpoint
CREATE TABLE `secure_numbers` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`e164` text NOT NULL,
	`country_code` text NOT NULL,
	`number` text NOT NULL,
	`person_id` integer,
	`assigned_at` integer,
	`created_at` integer NOT NULL,
	FOREIGN KEY (`person_id`) REFERENCES `people`(`id`) ON UPDATE no action ON DELETE set null
);
--> statement-breakpoint
CREATE UNIQUE INDEX `secure_numbers_e164_uq` ON `secure_numbers` (`e164`);--> statement-breakpoint
CREATE UNIQUE INDEX `secure_numbers_person_uq` ON `secure_numbers` (`person_id`);--> statement-breakpoint
CREATE TABLE `companies` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`kind` text NOT NULL,
	`name` text NOT NULL,
	`slug` text NOT NULL,
	`status` text DEFAULT 'enabled' NOT NULL,
	`url` text DEFAULT '' NOT NULL,
	`logo` text,
	`domain` text,
	`profile_url` text,
	`scanner` integer DEFAULT false NOT NULL,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `companies_slug_uq` ON `companies` (`slug`);--> statement-breakpoint
CREATE INDEX `companies_kind_idx` ON `companies` (`kind`);--> statement-breakpoint
CREATE TABLE `company_phones` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`company_id` integer NOT NULL,
	`country_code` text NOT NULL,
	`phone_number` text NOT NULL,
	`e164` text NOT NULL,
	FOREIGN KEY (`company_id`) REFERENCES `companies`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `company_phones_e164_idx` ON `company_phones` (`e164`);--> statement-breakpoint
CREATE INDEX `company_phones_company_idx` ON `company_phones` (`company_id`);--> statement-breakpoint
CREATE TABLE `invitations` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`company_id` integer NOT NULL,
	`person_id` integer NOT NULL,
	`email` text NOT NULL,
	`token_hash` text NOT NULL,
	`expires_at` integer NOT NULL,
	`accepted_at` integer,
	`created_at` integer NOT NULL,
	FOREIGN KEY (`company_id`) REFERENCES `companies`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`person_id`) REFERENCES `people`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE UNIQUE INDEX `invitations_token_hash_uq` ON `invitations` (`token_hash`);--> statement-breakpoint
CREATE INDEX `invitations_company_person_idx` ON `invitations` (`company_id`,`person_id`);--> statement-breakpoint
CREATE TABLE `membership_roles` (
	`membership_id` integer NOT NULL,
	`role_id` integer NOT NULL,
	PRIMARY KEY(`membership_id`, `role_id`),
	FOREIGN KEY (`membership_id`) REFERENCES `memberships`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`role_id`) REFERENCES `roles`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `membership_roles_role_idx` ON `membership_roles` (`role_id`);--> statement-breakpoint
CREATE TABLE `memberships` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`company_id` integer NOT NULL,
	`person_id` integer NOT NULL,
	`license_id` text,
	`license_start_at` integer,
	`license_end_at` integer,
	`license_renews` integer DEFAULT true NOT NULL,
	`license_prorate_on_renewal` integer DEFAULT false NOT NULL,
	`ephemeral_until` integer,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL,
	FOREIGN KEY (`company_id`) REFERENCES `companies`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`person_id`) REFERENCES `people`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`license_id`) REFERENCES `licenses`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE UNIQUE INDEX `memberships_company_person_uq` ON `memberships` (`company_id`,`person_id`);--> statement-breakpoint
CREATE INDEX `memberships_person_idx` ON `memberships` (`person_id`);--> statement-breakpoint
CREATE INDEX `memberships_company_license_idx` ON `memberships` (`company_id`,`license_id`);--> statement-breakpoint
CREATE INDEX `memberships_ephemeral_idx` ON `memberships` (`ephemeral_until`);--> statement-breakpoint
CREATE TABLE `roles` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`company_id` integer NOT NULL,
	`name` text NOT NULL,
	`permissions` text NOT NULL,
	FOREIGN KEY (`company_id`) REFERENCES `companies`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE UNIQUE INDEX `roles_company_name_uq` ON `roles` (`company_id`,`name`);--> statement-breakpoint
CREATE TABLE `consent_containers` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`publisher_id` integer NOT NULL,
	`enabled` integer DEFAULT true NOT NULL,
	`created_at` integer NOT NULL,
	FOREIGN KEY (`publisher_id`) REFERENCES `companies`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE UNIQUE INDEX `consent_containers_publisher_uq` ON `consent_containers` (`publisher_id`);--> statement-breakpoint
CREATE TABLE `container_vendors` (
	`container_id` integer NOT NULL,
	`vendor_id` integer NOT NULL,
	`position` integer NOT NULL,
	`category` text NOT NULL,
	PRIMARY KEY(`container_id`, `vendor_id`),
	FOREIGN KEY (`container_id`) REFERENCES `consent_containers`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`vendor_id`) REFERENCES `companies`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `container_vendors_order_idx` ON `container_vendors` (`container_id`,`position`);--> statement-breakpoint
CREATE TABLE `company_trust` (
	`person_id` integer NOT NULL,
	`company_id` integer NOT NULL,
	`trust` text NOT NULL,
	`updated_at` integer NOT NULL,
	PRIMARY KEY(`person_id`, `company_id`),
	FOREIGN KEY (`person_id`) REFERENCES `people`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`company_id`) REFERENCES `companies`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `company_trust_company_idx` ON `company_trust` (`company_id`);--> statement-breakpoint
CREATE TABLE `contact_addresses` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`contact_id` integer NOT NULL,
	`line` text NOT NULL,
	FOREIGN KEY (`contact_id`) REFERENCES `contacts`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `contact_addresses_contact_idx` ON `contact_addresses` (`contact_id`);--> statement-breakpoint
CREATE TABLE `contact_emails` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`contact_id` integer NOT NULL,
	`email` text NOT NULL,
	FOREIGN KEY (`contact_id`) REFERENCES `contacts`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `contact_emails_contact_idx` ON `contact_emails` (`contact_id`);--> statement-breakpoint
CREATE INDEX `contact_emails_email_idx` ON `contact_emails` (`email`);--> statement-breakpoint
CREATE TABLE `contact_phones` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`contact_id` integer NOT NULL,
	`e164` text NOT NULL,
	FOREIGN KEY (`contact_id`) REFERENCES `contacts`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `contact_phones_contact_idx` ON `contact_phones` (`contact_id`);--> statement-breakpoint
CREATE INDEX `contact_phones_e164_idx` ON `contact_phones` (`e164`);--> statement-breakpoint
CREATE TABLE `contacts` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`owner_id` integer NOT NULL,
	`display_name` text DEFAULT '' NOT NULL,
	`birthday` text,
	`labels` text DEFAULT '[]' NOT NULL,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL,
	FOREIGN KEY (`owner_id`) REFERENCES `people`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `contacts_owner_updated_idx` ON `contacts` (`owner_id`,`updated_at`);--> statement-breakpoint
CREATE TABLE `person_trust` (
	`person_id` integer NOT NULL,
	`trusted_person_id` integer NOT NULL,
	`trusted` integer NOT NULL,
	`updated_at` integer NOT NULL,
	PRIMARY KEY(`person_id`, `trusted_person_id`),
	FOREIGN KEY (`person_id`) REFERENCES `people`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`trusted_person_id`) REFERENCES `people`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `person_trust_trusted_idx` ON `person_trust` (`trusted_person_id`);--> statement-breakpoint
CREATE TABLE `trust_requests` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`requester_id` integer NOT NULL,
	`target_id` integer NOT NULL,
	`contact_reason` text DEFAULT '' NOT NULL,
	`status` text DEFAULT 'pending' NOT NULL,
	`decided_at` integer,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL,
	FOREIGN KEY (`requester_id`) REFERENCES `people`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`target_id`) REFERENCES `people`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE UNIQUE INDEX `trust_requests_pending_uq` ON `trust_requests` (`requester_id`,`target_id`) WHERE status = 'pending';--> statement-breakpoint
CREATE INDEX `trust_requests_target_idx` ON `trust_requests` (`target_id`,`status`);--> statement-breakpoint
CREATE TABLE `company_seats` (
	`company_id` integer NOT NULL,
	`license_id` text NOT NULL,
	`quantity` integer DEFAULT 0 NOT NULL,
	`updated_at` integer NOT NULL,
	PRIMARY KEY(`company_id`, `license_id`),
	FOREIGN KEY (`company_id`) REFERENCES `companies`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`license_id`) REFERENCES `licenses`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE TABLE `license_purchases` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`company_id` integer NOT NULL,
	`license_id` text NOT NULL,
	`quantity` integer NOT NULL,
	`purchased_by` integer,
	`created_at` integer NOT NULL,
	FOREIGN KEY (`company_id`) REFERENCES `companies`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`license_id`) REFERENCES `licenses`(`id`) ON UPDATE no action ON DELETE no action,
	FOREIGN KEY (`purchased_by`) REFERENCES `people`(`id`) ON UPDATE no action ON DELETE set null
);
--> statement-breakpoint
CREATE INDEX `license_purchases_company_idx` ON `license_purchases` (`company_id`,`created_at`);--> statement-breakpoint
CREATE TABLE `license_sites` (
	`license_id` text NOT NULL,
	`site_id` integer NOT NULL,
	PRIMARY KEY(`license_id`, `site_id`),
	FOREIGN KEY (`license_id`) REFERENCES `licenses`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`site_id`) REFERENCES `companies`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE TABLE `licenses` (
	`id` text PRIMARY KEY NOT NULL,
	`name` text NOT NULL,
	`price` integer NOT NULL,
	`currency` text DEFAULT 'USD' NOT NULL,
	`full_scan` integer DEFAULT false NOT NULL,
	`full_delete` integer DEFAULT false NOT NULL
);
--> statement-breakpoint
CREATE TABLE `people` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`first_name` text NOT NULL,
	`middle_name` text,
	`last_name` text NOT NULL,
	`dob` text,
	`avatar_url` text,
	`risk_score` integer DEFAULT 0 NOT NULL,
	`encryption_hash` text,
	`e2e_id` text,
	`last_scan_at` integer,
	`last_login_at` integer,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL
);
--> statement-breakpoint
CREATE TABLE `person_addresses` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`person_id` integer NOT NULL,
	`primary` integer DEFAULT false NOT NULL,
	`line_1` text NOT NULL,
	`line_2` text,
	`city` text NOT NULL,
	`region` text NOT NULL,
	`postal_code` text NOT NULL,
	`country` text NOT NULL,
	FOREIGN KEY (`person_id`) REFERENCES `people`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `person_addresses_person_idx` ON `person_addresses` (`person_id`);--> statement-breakpoint
CREATE TABLE `person_akas` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`person_id` integer NOT NULL,
	`first_name` text NOT NULL,
	`middle_name` text,
	`last_name` text,
	FOREIGN KEY (`person_id`) REFERENCES `people`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `person_akas_person_idx` ON `person_akas` (`person_id`);--> statement-breakpoint
CREATE TABLE `person_emails` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`person_id` integer NOT NULL,
	`email` text NOT NULL,
	`primary` integer DEFAULT false NOT NULL,
	`employer_company_id` integer,
	FOREIGN KEY (`person_id`) REFERENCES `people`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`employer_company_id`) REFERENCES `companies`(`id`) ON UPDATE no action ON DELETE set null
);
--> statement-breakpoint
CREATE UNIQUE INDEX `person_emails_email_uq` ON `person_emails` (`email`);--> statement-breakpoint
CREATE INDEX `person_emails_person_idx` ON `person_emails` (`person_id`);--> statement-breakpoint
CREATE INDEX `person_emails_employer_idx` ON `person_emails` (`employer_company_id`);--> statement-breakpoint
CREATE TABLE `person_phones` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`person_id` integer NOT NULL,
	`country_code` text NOT NULL,
	`phone_number` text NOT NULL,
	`e164` text NOT NULL,
	`primary` integer DEFAULT false NOT NULL,
	FOREIGN KEY (`person_id`) REFERENCES `people`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `person_phones_e164_idx` ON `person_phones` (`e164`);--> statement-breakpoint
CREATE INDEX `person_phones_person_idx` ON `person_phones` (`person_id`);--> statement-breakpoint
CREATE TABLE `exposure_history` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`exposure_id` integer NOT NULL,
	`site_id` integer NOT NULL,
	`event` text NOT NULL,
	`created_at` integer NOT NULL,
	FOREIGN KEY (`exposure_id`) REFERENCES `exposures`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`site_id`) REFERENCES `companies`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `exposure_history_exposure_idx` ON `exposure_history` (`exposure_id`,`created_at`);--> statement-breakpoint
CREATE TABLE `exposures` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`person_id` integer NOT NULL,
	`site_id` integer NOT NULL,
	`status` text DEFAULT 'pending' NOT NULL,
	`url` text,
	`data` text DEFAULT '{}' NOT NULL,
	`requested_at` integer,
	`closed_at` integer,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL,
	FOREIGN KEY (`person_id`) REFERENCES `people`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`site_id`) REFERENCES `companies`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `exposures_person_status_idx` ON `exposures` (`person_id`,`status`);--> statement-breakpoint
CREATE INDEX `exposures_status_idx` ON `exposures` (`status`,`id`);--> statement-breakpoint
CREATE INDEX `exposures_updated_idx` ON `exposures` (`updated_at`);--> statement-breakpoint
CREATE TABLE `scan_results` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`scan_id` text NOT NULL,
	`person_id` integer NOT NULL,
	`site_id` integer NOT NULL,
	`outcome` text NOT NULL,
	`url` text,
	`data` text,
	`at` integer NOT NULL,
	`created_at` integer NOT NULL,
	FOREIGN KEY (`person_id`) REFERENCES `people`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`site_id`) REFERENCES `companies`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE UNIQUE INDEX `scan_results_scan_site_uq` ON `scan_results` (`scan_id`,`site_id`);--> statement-breakpoint
CREATE INDEX `scan_results_person_site_idx` ON `scan_results` (`person_id`,`site_id`,`at`);--> statement-breakpoint
CREATE TABLE `scans` (
	`id` text PRIMARY KEY NOT NULL,
	`person_id` integer NOT NULL,
	`status` text NOT NULL,
	`started_at` integer,
	`completed_at` integer,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL,
	FOREIGN KEY (`person_id`) REFERENCES `people`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `scans_person_idx` ON `scans` (`person_id`);--> statement-breakpoint
CREATE TABLE `webhook_deliveries` (
	`id` text PRIMARY KEY NOT NULL,
	`company_id` integer NOT NULL,
	`webhook_id` integer,
	`event` text NOT NULL,
	`payload` text NOT NULL,
	`status` text DEFAULT 'pending' NOT NULL,
	`result` text DEFAULT '' NOT NULL,
	`attempts` integer DEFAULT 0 NOT NULL,
	`delivered_at` integer,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL,
	FOREIGN KEY (`company_id`) REFERENCES `companies`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`webhook_id`) REFERENCES `webhooks`(`id`) ON UPDATE no action ON DELETE set null
);
--> statement-breakpoint
CREATE INDEX `webhook_deliveries_company_created_idx` ON `webhook_deliveries` (`company_id`,`created_at`);--> statement-breakpoint
CREATE INDEX `webhook_deliveries_status_idx` ON `webhook_deliveries` (`status`,`updated_at`);--> statement-breakpoint
CREATE TABLE `webhooks` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`company_id` integer NOT NULL,
	`endpoint` text NOT NULL,
	`event` text NOT NULL,
	`active` integer DEFAULT true NOT NULL,
	`secret` text NOT NULL,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL,
	FOREIGN KEY (`company_id`) REFERENCES `companies`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `webhooks_company_event_idx` ON `webhooks` (`company_id`,`event`);