import type { D1Migration } from "cloudflare:test";

declare global {
  namespace Cloudflare {
    interface Env {
      /** Provided by test/vitest.config.ts for test/setup.ts. */
      TEST_MIGRATIONS: D1Migration[];
    }
  }
}
