import { describe, expect, it } from "vitest";
import { as, call } from "./helpers";

describe("smoke", () => {
  it("answers healthz and company 1", async () => {
    const health = await call("/healthz");
    expect(await health.json()).toEqual({ ok: true });
    const res = await as("alice").get("/companies/1");
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ id: 1, name: "Acme Corp" });
  });
});
