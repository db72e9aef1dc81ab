import { describe, expect, it } from "vitest";
import { listRoles } from "../../src/routes/companies/companies.routes";
import { answer, as, call, expectError } from "../helpers";

const acme = {
  id: 1,
  name: "Acme Corp",
  status: "enabled",
  url: "https://acme.example",
  logo: "https://acme.example/logo.png",
  scanner: false,
};

const sites = [
  { id: 3, name: "PeopleFinder", status: "enabled", url: "https://peoplefinder.example", logo: "", scanner: true },
  { id: 4, name: "SpyDirectory", status: "enabled", url: "https://spydirectory.example", logo: "", scanner: true },
  {
    id: 5,
    name: "WhitePages Archive",
    status: "enabled",
    url: "https://whitepages-archive.example",
    logo: "",
    scanner: false,
  },
];

describe("GET /companies/{company_id}", () => {
  it("returns the caller's company", async () => {
    const response = await as("alice").get("/companies/1");
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual(acme);
  });

  it("401 without a token, 403 for a Viewer, 404 for another tenant", async () => {
    await expectError(await call("/companies/1"), 401, "Unauthorized");
    await expectError(await as("bob").get("/companies/1"), 403, "Forbidden");
    await expectError(await as("alice").get("/companies/2"), 404, "Not Found");
  });
});

describe("GET /companies/{company_id}/roles", () => {
  it("lists the company's roles with their permissions", async () => {
    const response = await as("alice").get("/companies/1/roles");
    const roles = await answer(response, 200, listRoles);
    expect(roles.map((role) => role.name)).toEqual(["Admin", "HR", "Viewer"]);
    expect(roles[1]!.permissions).toEqual([
      "read employees",
      "write employees",
      "read exposures",
      "read licenses",
      "read sites",
    ]);
    expect(roles[2]!.permissions).toEqual(["read employees", "read exposures", "read sites"]);
    for (const permission of roles[0]!.permissions) expect(permission).toMatch(/^(read|write) [a-z]+$/);
  });

  it("401 without a token, 403 for a Viewer, 404 for another tenant", async () => {
    await expectError(await call("/companies/1/roles"), 401, "Unauthorized");
    await expectError(await as("bob").get("/companies/1/roles"), 403, "Forbidden");
    await expectError(await as("carol").get("/companies/1/roles"), 404, "Not Found");
  });
});

describe("people-search sites", () => {
  const listPaths = ["/companies/1/sites", "/1/sites"];
  const onePaths = ["/companies/1/site/4", "/companies/1/sites/4", "/1/site/4", "/1/sites/4"];

  it.each(listPaths)("GET %s lists every site with scanner status", async (path) => {
    const response = await as("bob").get(path);
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual(sites);
  });

  it.each(onePaths)("GET %s reads one site", async (path) => {
    const response = await as("bob").get(path);
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual(sites[1]);
  });

  it.each([...listPaths, ...onePaths])("GET %s: 401 without a token, 404 for another tenant", async (path) => {
    await expectError(await call(path), 401, "Unauthorized");
    await expectError(await as("carol").get(path), 404, "Not Found");
  });

  it.each(["/companies/1/site/1", "/companies/1/sites/6", "/1/site/999", "/1/sites/2"])(
    "GET %s: an id that is not a people-search site is 404",
    async (path) => {
      expect(await expectError(await as("alice").get(path), 404, "Not Found")).toMatch(/site \d+ does not exist/);
    },
  );

  it("answers 404 for a site id that is not a number: that path names nothing", async () => {
    const message = await expectError(await as("alice").get("/companies/1/site/abc"), 404, "Not Found");
    expect(message).toContain("`id`");
  });

  it("403 for a member without `read sites`", async () => {
    const { env } = await import("cloudflare:workers");
    // Give Bob, a Viewer, a role without `read sites` instead.
    await env.DB.batch([
      env.DB.prepare(
        "INSERT INTO roles (id, company_id, name, permissions) VALUES (100, 1, 'Settings only', '[\"read settings\"]')",
      ),
      env.DB.prepare("UPDATE membership_roles SET role_id = 100 WHERE membership_id = 2"),
    ]);
    try {
      await expectError(await as("bob").get("/companies/1/sites"), 403, "Forbidden");
      await expectError(await as("bob").get("/1/site/3"), 403, "Forbidden");
      expect((await as("bob").get("/companies/1")).status).toBe(200);
    } finally {
      await env.DB.batch([
        env.DB.prepare("UPDATE membership_roles SET role_id = 3 WHERE membership_id = 2"),
        env.DB.prepare("DELETE FROM roles WHERE id = 100"),
      ]);
    }
  });
});
