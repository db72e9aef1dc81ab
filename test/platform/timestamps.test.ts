import { describe, expect, it } from "vitest";
import { listContacts } from "../../src/routes/contacts/contacts.routes";
import { answer, as, expectError } from "../helpers";

/** docs/decisions.md: query timestamps accept any ISO 8601 form with an offset, or a bare date. */
describe("timestamps in query strings", () => {
  it.each([
    "2026-01-31T12:00:00Z",
    "2026-01-31T12:00:00.123Z",
    "2026-01-31T12:00Z",
    "2026-01-31T14:00:00+02:00",
    "2026-01-31T14:00:00+0200",
    "2026-01-31T14:00+02",
    "2026-01-31t12:00:00z",
    "2026-01-31",
  ])("accepts %s", async (value) => {
    const response = await as("alice").get(`/contacts?updated_at=${encodeURIComponent(value)}`);
    expect(response.status).toBe(200);
  });

  it("reads the offset: the same instant in two offsets filters the same", async () => {
    await as("carol").send("POST", "/contacts/sync", [{ display_name: "Offset probe" }]);
    const future = await as("carol").get(`/contacts?updated_at=${encodeURIComponent("2999-01-01T02:00:00+0200")}`);
    expect(await future.json()).toEqual([]);
    const past = await answer(
      await as("carol").get(`/contacts?updated_at=${encodeURIComponent("2000-01-01T02:00+02")}`),
      200,
      listContacts,
    );
    expect(past.length).toBeGreaterThan(0);
  });

  it.each([
    "2026-01-31T12:00:00",
    "2026-02-30",
    "2026-02-30T10:00:00Z",
    "yesterday",
    "2026-01-31T25:00:00Z",
    "1706702400",
  ])("rejects %s with a 400 naming the field", async (value) => {
    const response = await as("alice").get(`/contacts?updated_at=${encodeURIComponent(value)}`);
    expect(await expectError(response, 400, "Bad Request")).toContain("`updated_at`");
  });
});
