import { describe, expect, it } from "vitest";
import { createEmployee } from "../../src/routes/employees/employees.routes";
import { answer, as, call, expectError, insertToken } from "../helpers";

/**
 * A person's tokens go with the person. Verified tokens are cached for up to
 * 30 s, but a write must never run for a person who no longer exists: it is
 * a 401, not a 500 from a broken foreign key.
 */
describe("a token whose person was just removed", () => {
  it("is refused on writes at once", async () => {
    const email = `gone.${crypto.randomUUID().slice(0, 8)}@acme.example`;
    const created = await as("alice").send("POST", "/companies/1/employees", {
      first_name: "Gone",
      last_name: "Soon",
      dob: "1990-01-01",
      emails: [{ email }],
      addresses: [{ line_1: "1 Main St", city: "San Francisco", region: "CA", postal_code: "94105", country: "US" }],
      license: null,
    });
    const { id } = await answer(created, 200, createEmployee);
    const token = `pk_test_gone_${id}_${crypto.randomUUID().slice(0, 8)}`;
    await insertToken(token, { personId: id });
    expect((await call("/contacts", { token })).status).toBe(200); // verified and cached

    expect((await as("alice").send("DELETE", `/companies/1/employees/${id}`)).status).toBe(204);

    for (const [method, path, body] of [
      ["POST", "/contacts/sync", [{ display_name: "Someone" }]],
      ["POST", "/contacts/requests", { email: "alice@acme.example", contact_reason: "hi" }],
      ["PUT", "/apps/buzz/encryption", { hash: "h", e2e_id: "e" }],
    ] as const) {
      await expectError(await call(path, { method, token, body }), 401, "Unauthorized");
    }
  });
});
