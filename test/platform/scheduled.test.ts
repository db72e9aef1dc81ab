import {
  createExecutionContext,
  createMessageBatch,
  createScheduledController,
  getQueueResult,
  waitOnExecutionContext,
} from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it, vi } from "vitest";
import worker from "../../src/index";
import { countRows } from "../helpers";

/** Fires a cron trigger through the Worker's scheduled handler, as the runtime would. */
async function fireCron(cron: string, scheduledTime: number, bindings: Env = env) {
  const ctx = createExecutionContext();
  await worker.scheduled!(createScheduledController({ cron, scheduledTime }), bindings, ctx);
  await waitOnExecutionContext(ctx);
}

/** `env` whose D1 refuses every statement matching `sql`, as an outage of one job's table would. */
function failingFor(sql: RegExp): Env {
  const DB = new Proxy(env.DB, {
    get(target, prop) {
      if (prop === "prepare") {
        return (query: string) => {
          if (sql.test(query)) throw new Error("D1_ERROR: simulated failure");
          return target.prepare(query);
        };
      }
      const value = Reflect.get(target, prop, target) as unknown;
      return typeof value === "function" ? (value.bind(target) as unknown) : value;
    },
  });
  return { ...env, DB };
}

const hour = 3600_000;
const day = 24 * hour;

describe("hourly cron: ephemeral employees", () => {
  it("removes ephemeral employees 24 h after creation, keeping accounts that hold their own email", async () => {
    const now = Date.now();
    await env.DB.batch([
      env.DB.prepare(
        "INSERT INTO people (id, first_name, last_name, created_at, updated_at) VALUES (50, 'Eph', 'Only', ?1, ?1), (51, 'Eph', 'Own', ?1, ?1), (52, 'Eph', 'Fresh', ?1, ?1)",
      ).bind(now - 2 * day),
      env.DB.prepare(
        "INSERT INTO person_emails (person_id, email, \"primary\", employer_company_id) VALUES (50, 'eph.only@acme.example', 1, 1), (51, 'eph.own@acme.example', 1, 1), (51, 'eph.own@home.example', 0, NULL), (52, 'eph.fresh@acme.example', 1, 1)",
      ),
      env.DB.prepare(
        "INSERT INTO memberships (company_id, person_id, ephemeral_until, created_at, updated_at) VALUES (1, 50, ?1, ?2, ?2), (1, 51, ?1, ?2, ?2), (1, 52, ?3, ?4, ?4)",
      ).bind(now - hour, now - day - hour, now + day - hour, now - hour),
    ]);

    await fireCron("0 * * * *", now);

    expect(await countRows("SELECT count(*) AS n FROM people WHERE id = 50")).toBe(0);
    expect(await countRows("SELECT count(*) AS n FROM person_emails WHERE person_id = 50")).toBe(0);
    // Person 51 added an email of their own: the account stays, disconnected from Acme.
    expect(await countRows("SELECT count(*) AS n FROM people WHERE id = 51")).toBe(1);
    expect(await countRows("SELECT count(*) AS n FROM memberships WHERE person_id = 51")).toBe(0);
    expect(
      await countRows("SELECT count(*) AS n FROM person_emails WHERE person_id = 51 AND employer_company_id IS NULL"),
    ).toBe(1);
    expect(
      await countRows("SELECT count(*) AS n FROM person_emails WHERE person_id = 51 AND employer_company_id = 1"),
    ).toBe(0);
    // Not yet 24 h old: untouched. The demo employees are permanent and untouched.
    expect(await countRows("SELECT count(*) AS n FROM memberships WHERE person_id IN (1, 2, 52)")).toBe(3);
  });
});

describe("hourly cron: each job runs whatever another does", () => {
  let nextId = 60;

  // The daily test below counts every history row.
  afterEach(async () => {
    await env.DB.prepare("DELETE FROM webhook_deliveries WHERE id LIKE 'stale-%'").run();
  });

  /** One piece of work for each hourly job: an expired ephemeral employee, a pending exposure, a stale delivery. */
  async function arrange(now: number) {
    const ephemeral = nextId++;
    const exposed = nextId++;
    const delivery = `stale-${crypto.randomUUID()}`;
    const exposure = await env.DB.batch([
      env.DB.prepare(
        "INSERT INTO people (id, first_name, last_name, created_at, updated_at) VALUES (?1, 'Eph', 'Job', ?3, ?3), (?2, 'Exp', 'Job', ?3, ?3)",
      ).bind(ephemeral, exposed, now - 2 * day),
      env.DB.prepare(
        "INSERT INTO memberships (company_id, person_id, ephemeral_until, created_at, updated_at) VALUES (1, ?1, ?2, ?3, ?3)",
      ).bind(ephemeral, now - hour, now - day - hour),
      env.DB.prepare(
        "INSERT INTO webhook_deliveries (id, company_id, event, payload, status, created_at, updated_at) VALUES (?1, 1, 'scan:started', '{}', 'pending', ?2, ?2)",
      ).bind(delivery, now - hour),
      env.DB.prepare(
        "INSERT INTO exposures (person_id, site_id, status, created_at, updated_at) VALUES (?1, 3, 'pending', ?2, ?2) RETURNING id",
      ).bind(exposed, now - hour),
    ]);
    const exposureId = (exposure[3]!.results[0] as { id: number }).id;
    return {
      purged: async () => (await countRows("SELECT count(*) AS n FROM people WHERE id = ?", ephemeral)) === 0,
      requested: async () =>
        (await countRows("SELECT count(*) AS n FROM exposures WHERE id = ? AND status = 'in_progress'", exposureId)) ===
        1,
      swept: async () =>
        (await countRows(
          "SELECT count(*) AS n FROM webhook_deliveries WHERE id = ? AND due_at >= ?",
          delivery,
          now,
        )) === 1,
    };
  }

  const jobs = {
    sweep: /from "webhook_deliveries"/,
    purge: /ephemeral_until <=/,
    removals: /from "exposures"/,
  };

  for (const [failing, sql] of Object.entries(jobs)) {
    it(`a failing ${failing} is logged with its name and the other jobs still run`, async () => {
      const now = Date.now();
      const work = await arrange(now);
      const errors = vi.spyOn(console, "error");
      try {
        await fireCron("0 * * * *", now, failingFor(sql));
        const logged = errors.mock.calls.map(([line]) => JSON.parse(String(line)) as Record<string, unknown>);
        expect(logged).toContainEqual(
          expect.objectContaining({ level: "error", cron: "0 * * * *", job: failing, error: expect.any(String) }),
        );
      } finally {
        errors.mockRestore();
      }
      const ran = { sweep: await work.swept(), purge: await work.purged(), removals: await work.requested() };
      expect(ran).toEqual({ sweep: failing !== "sweep", purge: failing !== "purge", removals: failing !== "removals" });
    });
  }
});

describe("daily cron: webhook history", () => {
  it("prunes finished deliveries past their time (3 days after a success, 30 after a failure) and keeps the rest", async () => {
    const now = Date.now();
    const old = now - 31 * day;
    const recent = now - 2 * day;
    await env.DB.prepare(
      `INSERT INTO webhook_deliveries (id, company_id, event, payload, status, created_at, updated_at) VALUES
       ('old-success', 1, 'scan:started', '{}', 'success', ?1, ?1),
       ('old-failed', 1, 'scan:started', '{}', 'failed', ?1, ?1),
       ('old-pending', 1, 'scan:started', '{}', 'pending', ?1, ?1),
       ('recent-success', 1, 'scan:started', '{}', 'success', ?2, ?2)`,
    )
      .bind(old, recent)
      .run();

    await fireCron("30 3 * * *", now);

    const { results } = await env.DB.prepare("SELECT id FROM webhook_deliveries ORDER BY id").all<{ id: string }>();
    expect(results.map((row) => row.id)).toEqual(["old-pending", "recent-success"]);
  });
});

describe("queue consumer", () => {
  it("acknowledges dead-lettered messages instead of retrying them forever", async () => {
    const batch = createMessageBatch("webhook-deliveries-dlq", [
      { id: "m-1", timestamp: new Date(), attempts: 8, body: { deliveryId: "x" } },
    ]);
    const ctx = createExecutionContext();
    await worker.queue!(batch, env, ctx);
    const result = await getQueueResult(batch, ctx);
    expect(result.explicitAcks).toEqual(["m-1"]);
    expect(result.retryMessages).toEqual([]);
  });
});
