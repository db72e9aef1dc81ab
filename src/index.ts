import { createApp } from "./app";
import { handleScheduled } from "./cron/scheduled";
import { handleQueue } from "./queue/consumer";

const app = createApp();

const worker: ExportedHandler<Env> = {
  fetch: app.fetch,
  queue: handleQueue,
  scheduled: handleScheduled,
};

export default worker;
export { Company } from "./objects/company/company";
export { Person } from "./objects/person/person";
export { ReplayGuard } from "./objects/replay-guard/replay-guard";
