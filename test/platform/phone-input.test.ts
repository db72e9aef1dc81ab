import { describe, expect, it } from "vitest";
import { listEmployees } from "../../src/routes/employees/employees.routes";
import { answer, as, DEMO, expectError } from "../helpers";

const address = { line_1: "1 Main St", city: "San Francisco", region: "CA", postal_code: "94105", country: "US" };

describe("phone numbers given as calling code + number", () => {
  it("400 when the number carries a different calling code than `country_code`, and nothing is written", async () => {
    const email = `mismatch.${crypto.randomUUID().slice(0, 8)}@acme.example`;
    const response = await as("alice").send("POST", "/companies/1/employees", {
      first_name: "Mis",
      last_name: "Match",
      dob: "1990-01-01",
      emails: [{ email }],
      addresses: [address],
      phone_numbers: [{ country_code: "1", phone_number: "+44 20 7946 0958" }],
      license: null,
    });
    expect(await expectError(response, 400, "Bad Request")).toContain("`phone_numbers[0].phone_number`");
    const list = await answer(await as("alice").get(`/companies/1/employees?search=${email}`), 200, listEmployees);
    expect(list).toEqual([]);
  });

  it("trust-lookup does not treat a number with another calling code as the receiving member's", async () => {
    // +1 202 555 0101 is in the pool; "+44…" under number_code 1 is not that number.
    const response = await as("telephony").get(
      `/apps/buzz/trust-lookup?${new URLSearchParams({ number_code: "1", number: "+442025550101", inbound_code: "1", inbound: DEMO.acmePhone.slice(2) })}`,
    );
    expect(await response.json()).toEqual({ trusted: false, user_id: 0, caller_verification: null });
  });
});
