import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import doc from "../../docs/webhooks.md?raw";
import { EVENT_NAMES } from "../../src/domain/events";
import { deliveryBodySchema } from "../../src/routes/webhooks/webhook-events.schemas";
import {
  createWebhook as createWebhookRoute,
  getWebhook,
  listEvents,
  updateWebhook,
} from "../../src/routes/webhooks/webhooks.routes";
import { answer, as, expectError, fresh } from "../helpers";

/** PATCH of `endpoint` and `event`, and the events catalogue (docs/decisions.md, "Webhooks"). */

async function createWebhook(event = "scan:found") {
  const response = await as("alice").send("POST", "/companies/1/webhooks", {
    endpoint: `https://hooks.acme.example/${fresh("patch")}`,
    event,
  });
  expect(response.status).toBe(201);
  return await answer(response, 201, createWebhookRoute);
}

describe("PATCH /companies/{company_id}/webhooks/{id}: endpoint and event", () => {
  it("changes the endpoint and the event, keeping the rest", async () => {
    const webhook = await createWebhook();
    const endpoint = "https://other.acme.example/moved";
    const response = await as("alice").send("PATCH", `/companies/1/webhooks/${webhook.id}`, {
      endpoint,
      event: "person:created",
    });
    expect(response.status).toBe(200);
    const changed = await answer(response, 200, updateWebhook);
    expect(changed).toMatchObject({ id: webhook.id, endpoint, event: "person:created", active: true });
    expect(changed.secret).toBe(webhook.secret);
    const row = await env.DB.prepare("SELECT endpoint, event FROM webhooks WHERE id = ?")
      .bind(webhook.id)
      .first<{ endpoint: string; event: string }>();
    expect(row).toEqual({ endpoint, event: "person:created" });
  });

  it("checks a new endpoint as at creation and an event against the list; a refusal changes nothing", async () => {
    const webhook = await createWebhook();
    for (const body of [
      { endpoint: "not a url" },
      { endpoint: "ftp://hooks.acme.example/x" },
      { endpoint: "https://user:pw@hooks.acme.example/x" },
      { event: "scan:nope" },
    ]) {
      await expectError(
        await as("alice").send("PATCH", `/companies/1/webhooks/${webhook.id}`, body),
        400,
        "Bad Request",
      );
    }
    const after = await answer(await as("alice").get(`/companies/1/webhooks/${webhook.id}`), 200, getWebhook);
    expect(after).toMatchObject({ endpoint: webhook.endpoint, event: webhook.event });
  });

  it("an endpoint change leaves a deactivated webhook off (active is its own field)", async () => {
    const webhook = await createWebhook();
    await as("alice").send("PATCH", `/companies/1/webhooks/${webhook.id}`, { active: false });
    const moved = await as("alice").send("PATCH", `/companies/1/webhooks/${webhook.id}`, {
      endpoint: "https://third.acme.example/x",
    });
    expect((await answer(moved, 200, updateWebhook)).active).toBe(false);
  });
});

describe("GET /companies/{company_id}/webhooks/events", () => {
  it("lists every event with a description and a sample delivery body valid against its schema", async () => {
    const response = await as("alice").get("/companies/1/webhooks/events");
    expect(response.status).toBe(200);
    const catalog = await answer(response, 200, listEvents);
    expect(catalog.map((entry) => entry.event)).toEqual([...EVENT_NAMES]);
    for (const entry of catalog) {
      expect(entry.description.length).toBeGreaterThan(10);
      expect(entry.description).not.toContain("\n");
      const parsed = deliveryBodySchema(entry.event as (typeof EVENT_NAMES)[number]).safeParse(entry.sample);
      expect(parsed.error?.issues ?? []).toEqual([]);
      expect(parsed.data).toEqual(entry.sample);
      // The same body docs/webhooks.md shows for the event.
      const section = doc.split(/^#### /m).find((s) => s.startsWith(`${entry.event}\n`))!;
      expect(JSON.parse(/```json\n([\s\S]*?)```/.exec(section)![1]!)).toEqual(entry.sample);
    }
  });

  it("needs `read webhooks`: a Viewer is 403, another company's member 404", async () => {
    await expectError(await as("bob").get("/companies/1/webhooks/events"), 403, "Forbidden");
    await expectError(await as("carol").get("/companies/1/webhooks/events"), 404, "Not Found");
  });
});
