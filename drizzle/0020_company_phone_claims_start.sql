-- Hand-written (drizzle-kit --custom): claims made before claims expired get their 30 days
-- (docs/decisions.md, "Company phones") from this migration, not from 1970, the column's
-- default for rows that existed when it was added.
UPDATE `company_phones` SET `created_at` = CAST(strftime('%s', 'now') AS INTEGER) * 1000 WHERE `created_at` = 0;
