-- Trust requests sent per day are counted in each sender's own Durable Object now (drizzle-person/0001).
DROP TABLE `trust_request_days`;