import { describe, expect, it } from "vitest";
import { syncContacts } from "../../src/routes/contacts/contacts.routes";
import { answer, as, expectError } from "../helpers";

/**
 * Reads near users (docs/capacity.md): every answer carries the D1 session's
 * bookmark; a read that echoes it sees at least what that answer saw. Local
 * D1 has no replicas, so this checks the round trip and read-your-writes.
 */
describe("x-d1-bookmark", () => {
  it("a write answers a bookmark; a read with it sees the write and answers a bookmark too", async () => {
    const write = await as("bob").send("POST", "/contacts/sync", [{ display_name: "Bookmarked" }]);
    expect(write.status).toBe(200);
    const bookmark = write.headers.get("x-d1-bookmark");
    expect(bookmark).toMatch(/^[0-9A-Za-z-]+$/);
    const { id } = (await answer(write, 200, syncContacts))[0]!;

    const read = await as("bob").get(`/contacts/${id}`, { headers: { "x-d1-bookmark": bookmark! } });
    expect(read.status).toBe(200);
    expect(await read.json()).toMatchObject({ id, display_name: "Bookmarked" });
    expect(read.headers.get("x-d1-bookmark")).toMatch(/^[0-9A-Za-z-]+$/);
  });

  it("a read without a bookmark is served too, and answers one", async () => {
    // A read of D1 (the caller's companies); contacts live in the person's object, and a
    // read that asks D1 nothing has no session bookmark to answer.
    const read = await as("bob").get("/contacts/employees");
    expect(read.status).toBe(200);
    expect(read.headers.get("x-d1-bookmark")).toBeTruthy();
  });

  it("a malformed bookmark is a 400, not a 500", async () => {
    await expectError(
      await as("bob").get("/contacts", { headers: { "x-d1-bookmark": "not a bookmark!" } }),
      400,
      "Bad Request",
    );
  });
});
