import { describe, expect, it } from "vitest";
import { answer, as, expectError } from "../helpers";
import { listActivity } from "../../src/routes/buzz/buzz.routes";

/**
 * Who may record an activity: messages and outgoing calls are recorded by
 * their sender, incoming calls by their receiver. Otherwise one person could
 * put words in another's mouth, or claim another's message id.
 */
const chat = (from: number, to: number, messageId = crypto.randomUUID()) => ({
  type: "chat_message",
  sendable_type: "person",
  sendable_id: from,
  receivable_type: "person",
  receivable_id: to,
  message: "ZW5jcnlwdGVk",
  message_id: messageId,
});

describe("POST /apps/buzz/activity: direction", () => {
  it("refuses a message recorded in another person's name", async () => {
    const forged = await as("alice").send("POST", "/apps/buzz/activity", chat(2, 1));
    expect(await expectError(forged, 403, "Forbidden")).toContain("sender");
    const inbox = await answer(await as("bob").get("/apps/buzz/activity/0"), 200, listActivity);
    expect(inbox.filter((record) => record.sendable_id === 2)).toEqual([]);
  });

  it("refuses an outgoing call recorded by its receiver and an incoming call recorded by its caller", async () => {
    const outgoing = {
      type: "outgoing_call_missed",
      sendable_type: "person",
      sendable_id: 2,
      receivable_type: "person",
      receivable_id: 1,
    };
    await expectError(await as("alice").send("POST", "/apps/buzz/activity", outgoing), 403, "Forbidden");
    expect((await as("bob").send("POST", "/apps/buzz/activity", outgoing)).status).toBe(200);

    const incoming = { ...outgoing, type: "incoming_call_connected_secure" };
    await expectError(await as("bob").send("POST", "/apps/buzz/activity", incoming), 403, "Forbidden");
    expect((await as("alice").send("POST", "/apps/buzz/activity", incoming)).status).toBe(200);
  });

  it("answers 409 when a message id is reused for a different message, instead of returning the other record", async () => {
    const id = crypto.randomUUID();
    expect((await as("bob").send("POST", "/apps/buzz/activity", chat(2, 3, id))).status).toBe(200);
    // The same retry is idempotent ...
    const retry = await as("bob").send("POST", "/apps/buzz/activity", chat(2, 3, id));
    expect(retry.status).toBe(200);
    // ... but the same id for another receiver is a conflict, not someone else's record.
    const reused = await as("bob").send("POST", "/apps/buzz/activity", chat(2, 1, id));
    expect(await expectError(reused, 409, "Conflict")).toContain("message_id");
  });

  it("the same id for two different messages sent at the same moment: one is recorded, the other is the 409", async () => {
    const id = crypto.randomUUID();
    const [first, second] = await Promise.all([
      as("bob").send("POST", "/apps/buzz/activity", chat(2, 3, id)),
      as("bob").send("POST", "/apps/buzz/activity", chat(2, 1, id)),
    ]);
    expect([first!.status, second!.status].sort()).toEqual([200, 409]);
  });
});
