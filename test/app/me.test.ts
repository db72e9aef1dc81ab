import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it, vi } from "vitest";
import { heartbeat } from "../../src/routes/buzz/buzz.routes";
import { getMe, listMyDevices } from "../../src/routes/me/me.routes";
import { answer, as, call, employeeBody, expectError, indexWorkApplied, insertToken } from "../helpers";

/** GET /me: who the caller is (docs/decisions.md, "Me"). */
describe("GET /me", () => {
  it("answers the caller's id, names, secure number, companies with roles and the token's kind", async () => {
    const beat = await answer(await as("bob").get("/apps/buzz/heartbeat"), 200, heartbeat);
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
    const carol = await answer(await as("carol").get("/me"), 200, getMe);
    expect(carol.id).toBe(3);
    expect(carol.companies).toEqual([{ id: 2, name: "Globex", roles: ["Admin"] }]);
  });

  it("refuses a service token (403) and no token (401)", async () => {
    await expectError(await as("telephony").get("/me"), 403, "Forbidden");
    await expectError(await call("/me"), 401, "Unauthorized");
  });
});

describe("GET /me for a person of several companies and roles, and of none", () => {
  it("lists companies by id with their roles by name; no number and no company read as null and []", async () => {
    const now = Date.now();
    const id = 91_001;
    await env.DB.batch([
      env.DB.prepare(
        "INSERT INTO people (id, first_name, last_name, created_at, updated_at) VALUES (?1, 'Many', 'Hats', ?2, ?2)",
      ).bind(id, now),
      env.DB.prepare(
        "INSERT INTO memberships (company_id, person_id, created_at, updated_at) VALUES (2, ?1, ?2, ?2), (1, ?1, ?2, ?2)",
      ).bind(id, now),
      env.DB.prepare(
        `INSERT INTO membership_roles (membership_id, role_id)
         SELECT m.id, r.id FROM memberships m JOIN roles r ON r.company_id = m.company_id WHERE m.person_id = ?1`,
      ).bind(id),
    ]);
    const token = `pk_me_${crypto.randomUUID().replaceAll("-", "")}`;
    await insertToken(token, { personId: id });
    const roleNames = async (companyId: number) =>
      (
        await env.DB.prepare("SELECT name FROM roles WHERE company_id = ? ORDER BY name").bind(companyId).all<{
          name: string;
        }>()
      ).results.map((row) => row.name);
    const me = await call("/me", { token });
    expect(await me.json()).toEqual({
      id,
      first_name: "Many",
      middle_name: null,
      last_name: "Hats",
      secure_number: null,
      companies: [
        { id: 1, name: "Acme Corp", roles: await roleNames(1) },
        { id: 2, name: "Globex", roles: await roleNames(2) },
      ],
      token_kind: "person",
    });
    expect((await roleNames(1)).length).toBeGreaterThan(1);

    await env.DB.prepare("DELETE FROM memberships WHERE person_id = ?").bind(id).run();
    // A writer outside the commands: D1's trigger queued the person's facts, which the minute sweep tells
    // their object (docs/architecture.md, "Names travel with facts"); applied here as the sweep would.
    await indexWorkApplied([`prs:${id}`]);
    expect((await answer(await call("/me", { token }), 200, getMe)).companies).toEqual([]);
  });
});

describe("GET /me/devices: last_used_on", () => {
  afterEach(() => vi.useRealTimers());

  it("is the UTC day the device was last used, never the day before (a use recorded at most once a day)", async () => {
    const created = await as("alice").send("POST", "/companies/1/employees", {
      ...employeeBody(`used-${crypto.randomUUID().slice(0, 8)}`),
      license: null,
    });
    expect(created.status).toBe(200);
    const { id } = (await created.json()) as { id: number };
    const token = `pk_test_used_${crypto.randomUUID().replaceAll("-", "")}`;
    await insertToken(token, { personId: id });
    const lateOnDay1 = Date.UTC(2031, 0, 1, 23, 0);
    vi.useFakeTimers({ toFake: ["Date"], now: lateOnDay1 });
    expect((await call("/me", { token })).status).toBe(200);
    await scheduler.wait(20);
    vi.setSystemTime(lateOnDay1 + 11 * 3_600_000); // the next morning, 11 hours later
    expect((await call("/me", { token })).status).toBe(200);
    await scheduler.wait(20);
    const devices = await answer(await call("/me/devices", { token }), 200, listMyDevices);
    expect(devices.find((device) => device.current)!.last_used_on).toBe("2031-01-02");
  });
});
