import { describe, expect, it } from "vitest";
import { answer, as, DEMO } from "../helpers";
import { createActivity, listActivity } from "../../src/routes/buzz/buzz.routes";

/**
 * Whose feed a record appears in (docs/decisions.md, "Activity"): messages
 * are seen by both parties; a call record is the log of the person who wrote
 * it. And whether an id is an account is not revealed by the answer.
 */
const { bob, carol } = DEMO.people;

const record = async (who: "bob" | "carol", body: object) => {
  const response = await as(who).send("POST", "/apps/buzz/activity", {
    sendable_type: "person",
    receivable_type: "person",
    ...body,
  });
  return (await answer(response, 200, createActivity)).data.id;
};
const feed = async (who: "bob" | "carol") =>
  (await answer(await as(who).get("/apps/buzz/activity/0?limit=500"), 200, listActivity)).map((r) => r.id);

describe("activity visibility", () => {
  it("a call record stays in its recorder's feed; a message reaches both parties", async () => {
    // Bob claims a missed call "from Carol": it is Bob's log, not Carol's.
    const incoming = await record("bob", { type: "incoming_call_missed", sendable_id: carol, receivable_id: bob });
    const outgoing = await record("bob", { type: "outgoing_call_missed", sendable_id: bob, receivable_id: carol });
    const chat = await record("bob", {
      type: "chat_message",
      sendable_id: bob,
      receivable_id: carol,
      message: "aGk=",
      message_id: crypto.randomUUID(),
    });
    const bobs = await feed("bob");
    const carols = await feed("carol");
    expect(bobs).toEqual(expect.arrayContaining([incoming, outgoing, chat]));
    expect(carols).toContain(chat);
    expect(carols).not.toContain(incoming);
    expect(carols).not.toContain(outgoing);
  });

  it("answers the same for an unknown person id as for a known one", async () => {
    const statuses = [];
    for (const other of [carol, 987_654]) {
      const response = await as("bob").send("POST", "/apps/buzz/activity", {
        type: "outgoing_call_connected_secure",
        sendable_type: "person",
        sendable_id: bob,
        receivable_type: "person",
        receivable_id: other,
      });
      statuses.push(response.status);
    }
    expect(statuses).toEqual([200, 200]);
  });
});
