import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { PersonBody } from "../../src/services/people";
import { createEmployee, getEmployee, updateEmployee } from "../../src/routes/employees/employees.routes";
import { resolveCompanyAccess } from "../../src/middleware/company-access";
import { createDeps } from "../../src/services/create-deps";
import * as employees from "../../src/services/employees";
import { purgeExpiredEphemeral } from "../../src/services/memberships";
import { answer, as, call, DEMO, employeeAddress, employeeBody, expectError, fresh, insertToken } from "../helpers";

/*
 * Who may change or remove a member, and what a company may change of a
 * person who also belongs to another company. Own file: the tests count the
 * company's Admins, so no other file's employees may interfere.
 */

afterEach(() => vi.restoreAllMocks());

const ACME = "/companies/1/employees";
const ALICE = `${ACME}/${DEMO.people.alice}`;

/** `employeeBody` without a license: this file's employees take no seat. */
const body = (local: string, extra: Record<string, unknown> = {}) => employeeBody(local, { license: null, ...extra });

async function create(payload: unknown) {
  return answer(await as("alice").send("POST", ACME, payload), 200, createEmployee);
}

/** A new Acme member with the roles given, created by Alice, and a token of their own. */
async function member(roles: string[]) {
  const person = await create(body(fresh(roles.join("-").toLowerCase() || "none"), { roles }));
  const token = `pk_test_member_${person.id}_${crypto.randomUUID()}`;
  await insertToken(token, { personId: person.id });
  const send = (method: string, path: string, payload?: unknown) => call(path, { method, token, body: payload });
  return { person, send };
}

/** A Person as read back, without `last_login` (Alice reading herself moves it). */
async function read(path: string, who: "alice" | "carol" = "alice") {
  const person = await answer(await as(who).get(path), 200, getEmployee);
  return { ...person, last_login: null };
}

/** Acme members holding `write settings` (Alice alone in the demo world). */
async function settingsWriters(companyId = 1) {
  const { results } = await env.DB.prepare(
    `SELECT DISTINCT m.person_id AS id FROM memberships m
     JOIN membership_roles mr ON mr.membership_id = m.id
     JOIN roles r ON r.id = mr.role_id
     WHERE m.company_id = ? AND EXISTS (SELECT 1 FROM json_each(r.permissions) WHERE value = 'write settings')
     ORDER BY m.person_id`,
  )
    .bind(companyId)
    .all<{ id: number }>();
  return results.map((row) => row.id);
}

/** Takes every role from a member directly, so later tests start with Alice as the only Admin again. */
async function stripRoles(personId: number) {
  await env.DB.prepare(
    "DELETE FROM membership_roles WHERE membership_id IN (SELECT id FROM memberships WHERE company_id = 1 AND person_id = ?)",
  )
    .bind(personId)
    .run();
}

describe("a member may only change or remove members whose permissions they hold", () => {
  it("an HR member cannot demote an Admin, replace their emails or remove them (403); nothing changes", async () => {
    const hr = await member(["HR"]);
    const before = await read(ALICE);
    expect(before.roles).toEqual(["Admin"]);

    const demote = await hr.send("PUT", ALICE, { roles: ["Viewer"] });
    const message = await expectError(demote, 403, "Forbidden");
    expect(message).toContain("write settings");
    expect(message).toContain(`employee ${DEMO.people.alice}`);

    await expectError(
      await hr.send("PUT", ALICE, { emails: [{ email: `${fresh("hijack")}@acme.example` }] }),
      403,
      "Forbidden",
    );
    await expectError(await hr.send("PUT", ALICE, { first_name: "Mallory" }), 403, "Forbidden");
    await expectError(await hr.send("DELETE", ALICE), 403, "Forbidden");

    expect(await read(ALICE)).toEqual(before);
    expect(await settingsWriters()).toEqual([DEMO.people.alice]);
  });

  it("an HR member still changes and removes members whose permissions they all hold", async () => {
    const hr = await member(["HR"]);
    const viewer = await member(["Viewer"]);
    const peer = await member(["HR"]);

    const changed = await hr.send("PUT", `${ACME}/${viewer.person.id}`, { last_name: "Mulder", roles: [] });
    expect(changed.status).toBe(200);
    expect(await answer(changed, 200, updateEmployee)).toMatchObject({ last_name: "Mulder", roles: [] });

    expect((await hr.send("DELETE", `${ACME}/${peer.person.id}`)).status).toBe(204);
    await expectError(await as("alice").get(`${ACME}/${peer.person.id}`), 404, "Not Found");
  });

  it("Alice, the last Admin, cannot demote or remove herself (409); nothing changes", async () => {
    expect(await settingsWriters()).toEqual([DEMO.people.alice]);
    const before = await read(ALICE);

    const demote = await as("alice").send("PUT", ALICE, { roles: ["HR"] });
    const message = await expectError(demote, 409, "Conflict");
    expect(message).toContain("write settings");
    expect(message).toContain("another member");

    await expectError(await as("alice").send("PUT", ALICE, { roles: [] }), 409, "Conflict");
    await expectError(await as("alice").send("DELETE", ALICE), 409, "Conflict");

    expect(await read(ALICE)).toEqual(before);
    expect(await settingsWriters()).toEqual([DEMO.people.alice]);
  });

  it("the last Admin may still be changed in ways that keep `write settings`", async () => {
    const kept = await as("alice").send("PUT", ALICE, { roles: ["Admin", "HR"] });
    expect(kept.status).toBe(200);
    expect((await answer(kept, 200, updateEmployee)).roles).toEqual(["Admin", "HR"]);
    const back = await as("alice").send("PUT", ALICE, { roles: ["admin"] });
    expect((await answer(back, 200, updateEmployee)).roles).toEqual(["Admin"]);
  });

  it("with a second Admin, an Admin may be demoted or removed, including oneself", async () => {
    const second = await member(["Admin"]);
    expect(await settingsWriters()).toEqual([DEMO.people.alice, second.person.id]);

    // The second Admin steps down; Alice is left.
    const stepDown = await second.send("PUT", `${ACME}/${second.person.id}`, { roles: ["Viewer"] });
    expect(stepDown.status).toBe(200);
    expect(await settingsWriters()).toEqual([DEMO.people.alice]);

    const third = await member(["Admin"]);
    expect((await as("alice").send("DELETE", `${ACME}/${third.person.id}`)).status).toBe(204);
    expect(await settingsWriters()).toEqual([DEMO.people.alice]);
  });

  it("two Admins demoting each other at once leave one of them Admin", async () => {
    const other = await member(["Admin"]);
    const otherPath = `${ACME}/${other.person.id}`;
    const [mine, theirs] = await Promise.all([
      as("alice").send("PUT", otherPath, { roles: ["Viewer"] }),
      other.send("PUT", ALICE, { roles: ["Viewer"] }),
    ]);
    const statuses = [mine!.status, theirs!.status].sort();
    expect(statuses[0]).toBe(200);
    expect([403, 409]).toContain(statuses[1]);
    expect(await settingsWriters()).toHaveLength(1);

    // Put Alice back as the only Admin for the tests that follow.
    const [winner] = await settingsWriters();
    if (winner !== DEMO.people.alice) {
      await other.send("PUT", ALICE, { roles: ["Admin"] });
      await stripRoles(other.person.id);
    }
    expect(await settingsWriters()).toEqual([DEMO.people.alice]);
  });
});

describe("removals and the last `write settings` holder", () => {
  it("two Admins removing each other at once leave one of them (the guard is inside the removal batch)", async () => {
    const other = await member(["Admin"]);
    const second = await member(["Admin"]);
    // Alice steps back to Viewer so the two of them are the only holders.
    expect((await other.send("PUT", ALICE, { roles: ["Viewer"] })).status).toBe(200);
    expect(await settingsWriters()).toEqual([other.person.id, second.person.id].sort((a, b) => a - b));

    const [first, last] = await Promise.all([
      other.send("DELETE", `${ACME}/${second.person.id}`),
      second.send("DELETE", `${ACME}/${other.person.id}`),
    ]);
    const statuses = [first!.status, last!.status].sort();
    expect(statuses[0]).toBe(204);
    expect([401, 403, 404, 409]).toContain(statuses[1]);
    const left = await settingsWriters();
    expect(left).toHaveLength(1);

    // Alice is the only Admin again for the tests that follow.
    const survivor = left[0] === other.person.id ? other : second;
    expect((await survivor.send("PUT", ALICE, { roles: ["Admin"] })).status).toBe(200);
    expect((await as("alice").send("DELETE", `${ACME}/${survivor.person.id}`)).status).toBe(204);
    expect(await settingsWriters()).toEqual([DEMO.people.alice]);
  });
});

describe("what a command read before its batch, asked again inside it", () => {
  /**
   * The deps of a command whose batch, when it is sent, first lets `meanwhile` run: what another request
   * changes between this command's reads and its batch.
   */
  function racedBy(meanwhile: () => Promise<void>) {
    const real = createDeps(env);
    const db = new Proxy(real.db, {
      get: (target, key) =>
        key === "batch"
          ? async (items: Parameters<typeof target.batch>[0]) => {
              await meanwhile();
              return target.batch(items);
            }
          : (Reflect.get(target, key) as unknown),
    });
    return { ...real, db } as typeof real;
  }

  it("an HR member's demotion read a Viewer but lands on an Admin made meanwhile: 403, and the company keeps its holder", async () => {
    const hr = await member(["HR"]);
    const target = await member(["Viewer"]);
    const path = `${ACME}/${target.person.id}`;
    const access = await resolveCompanyAccess(createDeps(env), hr.person.id, 1, "write employees");
    // Meanwhile Alice makes the Viewer an Admin and steps back herself.
    const deps = racedBy(async () => {
      expect((await as("alice").send("PUT", path, { roles: ["Admin"] })).status).toBe(200);
      expect((await target.send("PUT", ALICE, { roles: ["Viewer"] })).status).toBe(200);
    });
    // Their roles as read, and a new name: a change (a PUT of what they have now alone writes nothing).
    const changes = { roles: ["Viewer"], lastName: "Demoted" };
    await expect(employees.updateEmployee(deps, access, target.person.id, changes)).rejects.toMatchObject({
      statusCode: 403,
    });
    expect(await settingsWriters()).toEqual([target.person.id]);
    // Alice is the only Admin again for the tests that follow.
    expect((await target.send("PUT", ALICE, { roles: ["Admin"] })).status).toBe(200);
    expect((await as("alice").send("DELETE", path)).status).toBe(204);
    expect((await as("alice").send("DELETE", `${ACME}/${hr.person.id}`)).status).toBe(204);
    expect(await settingsWriters()).toEqual([DEMO.people.alice]);
  });

  it("an HR member demoted to Viewer while their change and their removal of a Viewer were on their way: 403, nothing written", async () => {
    const hr = await member(["HR"]);
    const target = await member(["Viewer"]);
    const path = `${ACME}/${target.person.id}`;
    const access = await resolveCompanyAccess(createDeps(env), hr.person.id, 1, "write employees");
    let demoted = false;
    const deps = racedBy(async () => {
      if (demoted) return;
      demoted = true;
      expect((await as("alice").send("PUT", `${ACME}/${hr.person.id}`, { roles: ["Viewer"] })).status).toBe(200);
    });
    await expect(
      employees.updateEmployee(deps, access, target.person.id, { lastName: "Renamed" }),
    ).rejects.toMatchObject({
      statusCode: 403,
    });
    await expect(employees.removeEmployee(deps, access, target.person.id)).rejects.toMatchObject({ statusCode: 403 });
    expect((await read(path)).last_name).not.toBe("Renamed");
    expect((await as("alice").send("DELETE", path)).status).toBe(204);
    expect((await as("alice").send("DELETE", `${ACME}/${hr.person.id}`)).status).toBe(204);
  });

  it("an Admin's removal read a member without `write settings` who became its last holder while she was made a Viewer: 403", async () => {
    const other = await member(["Viewer"]);
    const path = `${ACME}/${other.person.id}`;
    const access = await resolveCompanyAccess(createDeps(env), DEMO.people.alice, 1, "write employees");
    const deps = racedBy(async () => {
      expect((await as("alice").send("PUT", path, { roles: ["Admin"] })).status).toBe(200);
      expect((await other.send("PUT", ALICE, { roles: ["Viewer"] })).status).toBe(200);
    });
    // Her roles as they are when the batch lands decide (a Viewer removes no one), before the last holder's rule.
    await expect(employees.removeEmployee(deps, access, other.person.id)).rejects.toMatchObject({ statusCode: 403 });
    expect(await settingsWriters()).toEqual([other.person.id]);
    expect((await other.send("PUT", ALICE, { roles: ["Admin"] })).status).toBe(200);
    expect((await as("alice").send("DELETE", path)).status).toBe(204);
    expect(await settingsWriters()).toEqual([DEMO.people.alice]);
  });

  it("a PUT that lands after the employee's removal is a 404, not a 500; nothing is written", async () => {
    const target = await member(["Viewer"]);
    const path = `${ACME}/${target.person.id}`;
    const access = await resolveCompanyAccess(createDeps(env), DEMO.people.alice, 1, "write employees");
    const deps = racedBy(async () => {
      expect((await as("alice").send("DELETE", path)).status).toBe(204);
    });
    const changes = { roles: ["Viewer"], akas: [{ firstName: "Late", middleName: null, lastName: null }] };
    await expect(employees.updateEmployee(deps, access, target.person.id, changes as never)).rejects.toMatchObject({
      statusCode: 404,
    });
    const { n } = (await env.DB.prepare("SELECT count(*) AS n FROM person_akas WHERE first_name = 'Late'").first<{
      n: number;
    }>())!;
    expect(n).toBe(0);
  });

  it("a PUT without roles that lands after the removal of an employee whose account stays (their own email): 404, nothing written", async () => {
    const local = fresh("leaver");
    const person = await create(body(local, { roles: ["Viewer"] }));
    // Their own email (no employer): the account outlives the membership.
    await env.DB.prepare(
      'INSERT INTO person_emails (person_id, email, "primary", employer_company_id) VALUES (?, ?, 0, NULL)',
    )
      .bind(person.id, `${local}@own.example`)
      .run();
    const access = await resolveCompanyAccess(createDeps(env), DEMO.people.alice, 1, "write employees");
    let removed = false;
    const deps = racedBy(async () => {
      if (removed) return;
      removed = true;
      expect((await as("alice").send("DELETE", `${ACME}/${person.id}`)).status).toBe(204);
    });
    const taken = `${fresh("orphan")}@acme.example`;
    await expect(
      employees.updateEmployee(deps, access, person.id, {
        firstName: "Ghost",
        emails: [{ primary: true, email: taken }],
      } as never),
    ).rejects.toMatchObject({ statusCode: 404 });
    const row = await env.DB.prepare("SELECT first_name AS name FROM people WHERE id = ?")
      .bind(person.id)
      .first<{ name: string }>();
    expect(row?.name).not.toBe("Ghost");
    expect(await env.DB.prepare("SELECT 1 FROM person_emails WHERE email = ?").bind(taken).first()).toBeNull();
    // The address is free for Acme's next employee.
    expect(
      (await as("alice").send("POST", ACME, body(fresh("reuse"), { emails: [{ primary: true, email: taken }] })))
        .status,
    ).toBe(200);
  });

  it("a rename read a person of Acme alone, but the operator added them to Globex meanwhile: 409, their names stay", async () => {
    const local = fresh("joins-globex");
    const target = await create(body(local, { roles: ["Viewer"] }));
    const access = await resolveCompanyAccess(createDeps(env), DEMO.people.alice, 1, "write employees");
    const operator = `pk_test_operator_${crypto.randomUUID()}`;
    await insertToken(operator, { serviceName: "operator", scopes: ["platform:admin"] });
    let joined = false;
    const deps = racedBy(async () => {
      if (joined) return;
      joined = true;
      const response = await call("/internal/companies/2/members", {
        method: "POST",
        token: operator,
        body: { first_name: "X", last_name: "Y", email: `${local}@acme.example`, roles: ["Viewer"] },
      });
      expect(response.status).toBe(201);
    });
    await expect(
      employees.updateEmployee(deps, access, target.id, { firstName: "Renamed", akas: [] } as never),
    ).rejects.toMatchObject({ statusCode: 409 });
    const globex = await read(`/companies/2/employees/${target.id}`, "carol");
    expect([globex.first_name, globex.akas]).toEqual([target.first_name, target.akas]);
  });

  it("a purge whose chunk meets one company's race still removes the other companies' expired members in that run", async () => {
    const temporary = await create(body(fresh("racing-admin"), { roles: ["Admin"], ephemeral: true }));
    const globexTemp = await answer(
      await as("carol").send("POST", "/companies/2/employees", body(fresh("globex-temp"), { ephemeral: true })),
      200,
      createEmployee,
    );
    const tokenOf = `pk_test_racing_${temporary.id}_${crypto.randomUUID()}`;
    await insertToken(tokenOf, { personId: temporary.id });
    let raced = false;
    // Between the purge's read and its batch, Alice steps back: the expiring Admin becomes Acme's last holder.
    const deps = racedBy(async () => {
      if (raced) return;
      raced = true;
      expect((await call(ALICE, { method: "PUT", token: tokenOf, body: { roles: ["Viewer"] } })).status).toBe(200);
    });
    const { removed } = await purgeExpiredEphemeral(deps, new Date(Date.now() + 25 * 3600_000));
    expect(removed).toContainEqual({ companyId: 2, personId: globexTemp.id });
    expect(removed).not.toContainEqual({ companyId: 1, personId: temporary.id });
    expect(await settingsWriters()).toEqual([temporary.id]);
    // Alice is the only Admin again for the tests that follow.
    expect((await call(ALICE, { method: "PUT", token: tokenOf, body: { roles: ["Admin"] } })).status).toBe(200);
    expect((await as("alice").send("DELETE", `${ACME}/${temporary.id}`)).status).toBe(204);
    expect(await settingsWriters()).toEqual([DEMO.people.alice]);
  });

  it("the ephemeral purge keeps an expired member who is the company's last holder of `write settings`", async () => {
    const temporary = await create(body(fresh("ephemeral-admin"), { roles: ["Admin"], ephemeral: true }));
    // Alice steps back: the ephemeral Admin is the only holder.
    const tokenOf = `pk_test_ephemeral_${temporary.id}_${crypto.randomUUID()}`;
    await insertToken(tokenOf, { personId: temporary.id });
    const asTemporary = (method: string, path: string, payload?: unknown) =>
      call(path, { method, token: tokenOf, body: payload });
    expect((await asTemporary("PUT", ALICE, { roles: ["Viewer"] })).status).toBe(200);
    const { removed } = await purgeExpiredEphemeral(createDeps(env), new Date(Date.now() + 25 * 3600_000));
    expect(removed).not.toContainEqual({ companyId: 1, personId: temporary.id });
    expect(await settingsWriters()).toEqual([temporary.id]);
    // Once Alice holds it again, the next purge removes them.
    expect((await asTemporary("PUT", ALICE, { roles: ["Admin"] })).status).toBe(200);
    const next = await purgeExpiredEphemeral(createDeps(env), new Date(Date.now() + 25 * 3600_000));
    expect(next.removed).toContainEqual({ companyId: 1, personId: temporary.id });
    expect(await settingsWriters()).toEqual([DEMO.people.alice]);
  });
});

/**
 * A person who is an employee of Acme and of Globex (no API creates that yet:
 * written directly), with a Globex work email that is their primary there.
 */
async function sharedPerson() {
  const local = fresh("shared");
  const person = await create(
    body(local, {
      akas: [{ first_name: "Starbuck" }],
      phone_numbers: [{ country_code: "1", phone_number: "4155550123" }],
      roles: ["Viewer"],
    }),
  );
  const now = Date.now();
  await env.DB.batch([
    env.DB.prepare("INSERT INTO memberships (company_id, person_id, created_at, updated_at) VALUES (2, ?, ?, ?)").bind(
      person.id,
      now,
      now,
    ),
    env.DB.prepare(
      'INSERT INTO person_emails (person_id, email, "primary", employer_company_id) VALUES (?, ?, 1, 2)',
    ).bind(person.id, `${local}@globex.example`),
  ]);
  const globex = `/companies/2/employees/${person.id}`;
  return { person, local, acme: `${ACME}/${person.id}`, globex };
}

const emailsOf = (person: PersonBody) => person.emails.map((entry) => [entry.email, entry.primary]);

describe("a person who also belongs to another company", () => {
  it("Acme changing its emails leaves the primary flag of Globex's email alone", async () => {
    const { local, acme, globex } = await sharedPerson();
    const globexBefore = await read(globex, "carol");
    expect(emailsOf(globexBefore)).toEqual([[`${local}@globex.example`, true]]);

    const response = await as("alice").send("PUT", acme, {
      emails: [{ email: `${local}@acme.example` }, { email: `${local}.new@acme.example`, primary: true }],
    });
    expect(response.status).toBe(200);
    expect(emailsOf(await answer(response, 200, updateEmployee))).toEqual([
      [`${local}@acme.example`, false],
      [`${local}.new@acme.example`, true],
    ]);
    expect(await read(globex, "carol")).toEqual(globexBefore);
  });

  it("Acme cannot take over Globex's email of the same person (400); nothing changes", async () => {
    const { local, acme, globex } = await sharedPerson();
    const acmeBefore = await read(acme);
    const response = await as("alice").send("PUT", acme, {
      emails: [{ email: `${local}@globex.example`, primary: true }],
    });
    expect(await expectError(response, 400, "Bad Request")).toContain(`${local}@globex.example`);
    expect(await read(acme)).toEqual(acmeBefore);
    expect(emailsOf(await read(globex, "carol"))).toEqual([[`${local}@globex.example`, true]]);
  });

  it.each([
    ["first_name", { first_name: "Fox" }],
    ["middle_name", { middle_name: "William" }],
    ["last_name", { last_name: "Mulder" }],
    ["dob", { dob: "1961-10-13" }],
    ["akas", { akas: [] }],
    ["phone_numbers", { phone_numbers: [{ country_code: "1", phone_number: "4155550124" }] }],
    ["addresses", { addresses: [{ ...employeeAddress, line_1: "2 Main St" }] }],
  ])("changing `%s` is a 409, and nothing changes for either company", async (field, change) => {
    const { acme, globex } = await sharedPerson();
    const acmeBefore = await read(acme);
    const globexBefore = await read(globex, "carol");
    // Sent with a company-scoped change, which must not be written either.
    const response = await as("alice").send("PUT", acme, { ...change, roles: ["HR"] });
    const message = await expectError(response, 409, "Conflict");
    expect(message).toContain("this person also belongs to another company");
    expect(message).toContain(`\`${field}\``);
    expect(await read(acme)).toEqual(acmeBefore);
    expect(await read(globex, "carol")).toEqual(globexBefore);
  });

  it("company-scoped changes still work, and person-wide fields sent unchanged are accepted", async () => {
    const { local, acme, globex } = await sharedPerson();
    const before = await read(acme);
    const globexBefore = await read(globex, "carol");
    const response = await as("alice").send("PUT", acme, {
      first_name: before.first_name,
      last_name: before.last_name,
      dob: before.dob,
      akas: before.akas,
      phone_numbers: before.phone_numbers,
      addresses: before.addresses,
      roles: ["HR"],
      license: "scan",
      emails: [{ email: `${local}.work@acme.example` }],
    });
    expect(response.status).toBe(200);
    const after = await answer(response, 200, updateEmployee);
    expect(after).toMatchObject({
      roles: ["HR"],
      license: { type: "scan" },
      akas: before.akas,
      phone_numbers: before.phone_numbers,
      addresses: before.addresses,
    });
    expect(emailsOf(after)).toEqual([[`${local}.work@acme.example`, true]]);
    const globexAfter = await read(globex, "carol");
    expect(globexAfter).toEqual(globexBefore);
  });

  it("Acme cannot make the person's own email their primary (409); nothing changes", async () => {
    const { local, acme, globex } = await sharedPerson();
    await env.DB.prepare(
      'INSERT INTO person_emails (person_id, email, "primary") VALUES ((SELECT person_id FROM person_emails WHERE email = ?), ?, 0)',
    )
      .bind(`${local}@acme.example`, `${local}@own.example`)
      .run();

    // Naming the person's own (not primary) email as primary would change what Globex sees.
    const response = await as("alice").send("PUT", acme, {
      emails: [{ email: `${local}@acme.example` }, { email: `${local}@own.example`, primary: true }],
    });
    expect(await expectError(response, 409, "Conflict")).toContain(`${local}@own.example`);
    expect(emailsOf(await read(globex, "carol"))).toEqual([
      [`${local}@globex.example`, true],
      [`${local}@own.example`, false],
    ]);
  });

  it("when the person's own email is primary, each company still sees exactly one primary", async () => {
    const { local, acme, globex } = await sharedPerson();
    await env.DB.prepare(
      'INSERT INTO person_emails (person_id, email, "primary") VALUES ((SELECT person_id FROM person_emails WHERE email = ?), ?, 1)',
    )
      .bind(`${local}@acme.example`, `${local}@own.example`)
      .run();

    // A company's own choice of primary wins over the person's in its view.
    expect(emailsOf(await read(acme))).toEqual([
      [`${local}@acme.example`, true],
      [`${local}@own.example`, false],
    ]);
    expect(emailsOf(await read(globex, "carol"))).toEqual([
      [`${local}@globex.example`, true],
      [`${local}@own.example`, false],
    ]);

    // Naming the person's primary email as Acme's primary changes nothing of theirs: allowed.
    const response = await as("alice").send("PUT", acme, {
      emails: [{ email: `${local}@acme.example` }, { email: `${local}@own.example`, primary: true }],
    });
    expect(response.status).toBe(200);
    expect(emailsOf(await answer(response, 200, updateEmployee))).toEqual([
      [`${local}@acme.example`, false],
      [`${local}@own.example`, true],
    ]);
    expect(emailsOf(await read(globex, "carol"))).toEqual([
      [`${local}@globex.example`, true],
      [`${local}@own.example`, false],
    ]);
  });
});
