import { describe, expect, it } from "vitest";
import { as } from "../helpers";

/**
 * Every list a client can send (a comma list or a repeated query parameter)
 * is bound as one JSON value or de-duplicated and capped: D1 refuses a
 * statement with more than 100 bound parameters, which used to surface as a
 * 500 ("too many SQL variables").
 */
const repeated = (name: string, value: string, times = 120) =>
  Array.from({ length: times }, () => `${name}=${encodeURIComponent(value)}`).join("&");
const distinct = (name: string, times = 120) => `${name}=${Array.from({ length: times }, (_, i) => i + 1).join(",")}`;

const requests: [string, string][] = [
  ["alice", `/companies/1/employees/exposures?${repeated("status", "pending")}`],
  ["alice", `/companies/1/employees/exposures?status=${Array(120).fill("pending").join(",")}`],
  ["alice", `/companies/1/employees/exposures?${repeated("employees", "1")}`],
  ["alice", `/companies/1/employees/exposures?${distinct("employees", 1000)}`],
  ["alice", `/companies/1/employees/exposures?${repeated("since", "2026-01-01")}`],
  ["alice", `/companies/1/employees?${repeated("search", "a")}`],
  ["alice", `/companies/1/employees?${repeated("page", "1")}`],
  ["alice", `/contacts?${repeated("include", "emails")}`],
  ["alice", `/contacts?include=${Array(120).fill("emails").join(",")}`],
  ["alice", `/contacts?${repeated("updated_at", "2026-01-01")}`],
  ["alice", `/apps/buzz/activity/0?${repeated("limit", "5")}`],
  [
    "telephony",
    `/apps/buzz/trust-lookup?${repeated("number", "2025550101")}&number_code=1&inbound_code=1&inbound=4155550100`,
  ],
  [
    "telephony",
    `/apps/buzz/call-lookup?${repeated("number", "2025550101")}&number_code=1&inbound_code=1&inbound=4155550100`,
  ],
];

describe("list parameters never reach D1 one bound parameter per value", () => {
  it.each(requests)("%s GET %s", async (who, path) => {
    const response = await as(who as "alice").get(path);
    expect(response.status, await response.clone().text()).toBeLessThan(500);
  });

  it("a sync naming 500 contact ids that are not the caller's is a 400", async () => {
    const body = Array.from({ length: 500 }, (_, i) => ({ id: 1_000_000 + i, display_name: "x" }));
    const response = await as("bob").send("POST", "/contacts/sync", body);
    expect(response.status).toBe(400);
  });

  it("a scan batch naming 100 distinct people and sites is checked without a 500", async () => {
    const body = Array.from({ length: 100 }, (_, i) => ({
      type: "found",
      scan_id: `s${i}`,
      person_id: 10_000 + i,
      site_id: 20_000 + i,
      at: "2026-01-01T00:00:00Z",
    }));
    const response = await as("scanner").send("POST", "/internal/scan-events", body);
    expect(response.status).toBe(400);
  });
});
