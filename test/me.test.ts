import { describe, expect, it } from "vitest";
import { as, call, expectError } from "./helpers";

/** GET /me: who the caller is (docs/decisions.md, "Me"). */
describe("GET /me", () => {
  it("answers the caller's id, names, secure number, companies with roles and the token's kind", async () => {
    const beat = (await (await as("bob").get("/apps/buzz/heartbeat")).json()) as { secure_number: unknown };
    const res = await as("bob").get("/me");
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({
      id: 2,
      first_name: "Bob",
      middle_name: null,
      last_name: "Builder",
      secure_number: beat.secure_number,
      companies: [{ id: 1, name: "Acme Corp", roles: ["Viewer"] }],
      token_kind: "person",
    });
    const carol = (await (await as("carol").get("/me")).json()) as { id: number; companies: unknown[] };
    expect(carol.id).toBe(3);
    expect(carol.companies).toEqual([{ id: 2, name: "Globex", roles: ["Admin"] }]);
  });

  it("refuses a service token (403) and no token (401)", async () => {
    await expectError(await as("telephony").get("/me"), 403, "Forbidden");
    await expectError(await call("/me"), 401, "Unauthorized");
  });
});
