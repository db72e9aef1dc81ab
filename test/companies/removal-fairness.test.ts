import { createExecutionContext, createScheduledController, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import worker from "../../src/index";
import { REMOVAL_BATCH_SIZE, submitRemovalRequests } from "../../src/services/exposures";
import { createDeps } from "../../src/services/create-deps";
import { countRows, DEMO } from "../helpers";

// Removal requests are fair across companies (docs/decisions.md, "Removal requests"): a company's
// backlog of pending exposures does not delay another company's first removal past the first chunk.

const BACKLOG = 5_000;

// D1's removal step serves the companies whose scan side is in D1 (older than migration 0032): Acme and Globex here.
beforeAll(async () => {
  await env.DB.prepare("UPDATE companies SET scans_in_object = 0 WHERE id IN (?, ?)")
    .bind(DEMO.companies.acme, DEMO.companies.globex)
    .run();
});

async function pendingBacklog(personId: number, n: number, tag: string) {
  await env.DB.prepare(
    `WITH RECURSIVE k(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM k WHERE i < ?3)
     INSERT INTO exposures (person_id, site_id, status, url, data, created_at, updated_at)
     SELECT ?1, 3, 'pending', 'https://peoplefinder.example/' || ?2 || '/' || i, '{}', ?4, ?4 FROM k`,
  )
    .bind(personId, tag, n, Date.now() - 3600_000)
    .run();
}

const statusOf = async (tag: string) =>
  env.DB.prepare("SELECT status FROM exposures WHERE url LIKE ?").bind(`https://peoplefinder.example/${tag}/%`).all<{
    status: string;
  }>();

describe("removal requests, fair across companies", () => {
  it("a company with 5,000 pending removals does not delay another company's first removal by more than one chunk", async () => {
    await env.DB.prepare("UPDATE exposures SET status = 'in_progress' WHERE status = 'pending'").run();
    // Acme's Bob: 5,000 pending, all older than Globex's Carol's one.
    await pendingBacklog(DEMO.people.bob, BACKLOG, "acme-backlog");
    await pendingBacklog(DEMO.people.carol, 1, "globex-first");

    // One chunk: a single removal command of at most REMOVAL_BATCH_SIZE exposures, shared by the two
    // companies with pending exposures (half each; Globex needs one).
    const result = await submitRemovalRequests(createDeps(env), new Date(), { maxBatches: 1 });
    expect(result).toEqual({ moved: REMOVAL_BATCH_SIZE / 2 + 1, more: true });
    expect((await statusOf("globex-first")).results).toEqual([{ status: "in_progress" }]);
    // The rest of the chunk is Acme's oldest, in order.
    const moved = await env.DB.prepare(
      "SELECT url FROM exposures WHERE status = 'in_progress' AND url LIKE 'https://peoplefinder.example/acme-backlog/%' ORDER BY id",
    ).all<{ url: string }>();
    expect(moved.results.map((row) => row.url)).toEqual(
      Array.from({ length: REMOVAL_BATCH_SIZE / 2 }, (_, i) => `https://peoplefinder.example/acme-backlog/${i + 1}`),
    );
  });

  it("the hourly run moves another company's newest pending exposure in its first chunk despite the backlog", async () => {
    await env.DB.prepare("UPDATE exposures SET status = 'in_progress' WHERE status = 'pending'").run();
    await pendingBacklog(DEMO.people.bob, BACKLOG, "acme-hourly");
    await pendingBacklog(DEMO.people.carol, 2, "globex-hourly");
    const ctx = createExecutionContext();
    await worker.scheduled!(createScheduledController({ cron: "0 * * * *", scheduledTime: Date.now() }), env, ctx);
    await waitOnExecutionContext(ctx);
    expect((await statusOf("globex-hourly")).results).toEqual([{ status: "in_progress" }, { status: "in_progress" }]);
    // Acme's backlog is still being worked through (by `removals` continuations).
    expect(
      await countRows(
        "SELECT count(*) AS n FROM exposures WHERE status = 'pending' AND url LIKE 'https://peoplefinder.example/acme-hourly/%'",
      ),
    ).toBeGreaterThan(0);
  });
});
