import { createApp } from "./app";
import { handleQueue } from "./queue/consumer";
import { handleScheduled } from "./cron/scheduled";

const app = createApp();

export default {
  fetch: app.fetch,
  queue: handleQueue,
  scheduled: handleScheduled,
} satisfies ExportedHandler<Env>;
