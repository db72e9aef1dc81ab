import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { signIn as signInRoute } from "../../src/routes/auth/auth.routes";
import { addMyPhone, getMe, listMyDevices, listMyPhones } from "../../src/routes/me/me.routes";
import {
  acmeEmployeeWithPhone,
  answer,
  as,
  asAny,
  call,
  codeSentTo,
  DEMO,
  expectError,
  fresh,
  inPersonObject,
  insertToken,
  personObject,
} from "../helpers";

/*
 * Signing in and devices (docs/app.md, "Signing in" and "Devices"): a code to an email or a phone, a
 * token per device, the device list, and signing a device out, which closes its streams at once.
 */

const chat = (sender: number, receiver: number) => ({
  type: "chat_message",
  sendable_type: "person",
  sendable_id: sender,
  receivable_type: "person",
  receivable_id: receiver,
  message: "Y2lwaGVydGV4dA==",
  message_id: crypto.randomUUID(),
});

async function signIn(address: { email: string } | { phone: string }, device_name: string) {
  const asked = await call("/auth/codes", { method: "POST", body: address });
  expect(asked.status).toBe(202);
  expect(await asked.json()).toEqual({ expires_in: 600 });
  const code = await codeSentTo("email" in address ? address.email : address.phone);
  const signed = await call("/auth/tokens", { method: "POST", body: { ...address, code, device_name } });
  return answer(signed, 201, signInRoute);
}

const emailOf = async (personId: number) =>
  (await env.DB.prepare("select email from person_emails where person_id = ?")
    .bind(personId)
    .first<{ email: string }>())!.email;

const outboxCount = async (to: string) =>
  (await env.DB.prepare('select count(*) as n from dev_outbox where "to" = ?').bind(to).first<{ n: number }>())!.n;

describe("signing in", () => {
  it("by email: a code, then a token for this device that works at once; its devices list it", async () => {
    const signed = await signIn({ email: "bob@acme.example" }, "Bob's Pixel 9");
    expect(signed.token).toMatch(/^pk_[A-Za-z0-9_-]{43}$/);
    expect(signed.device).toMatchObject({ name: "Bob's Pixel 9" });
    const me = await call("/me", { token: signed.token });
    expect(me.status).toBe(200);
    expect(await me.json()).toMatchObject({ id: DEMO.people.bob, token_kind: "person" });

    const devices = await answer(await call("/me/devices", { token: signed.token }), 200, listMyDevices);
    const mine = devices.find((d) => d.id === signed.device.id);
    expect(mine).toMatchObject({ name: "Bob's Pixel 9", current: true });
    // The demo token, minted by the operator, is a device too.
    expect(devices.filter((d) => d.name === "minted by the operator").length).toBeGreaterThan(0);
    expect(devices.filter((d) => d.current)).toHaveLength(1);
  });

  it("by phone: signing in proves that phone", async () => {
    const number = "+16505551212";
    const id = await acmeEmployeeWithPhone("phone", number);
    const signed = await signIn({ phone: number }, "Work phone");
    expect((await answer(await call("/me", { token: signed.token }), 200, getMe)).id).toBe(id);
    const phones = await answer(await call("/me/phones", { token: signed.token }), 200, listMyPhones);
    expect(phones).toMatchObject([{ confirmed: true }]);
  });

  it("an address that reaches nobody: the same answer, no message; its code is refused like a wrong one", async () => {
    const nobody = `${fresh("nobody")}@nowhere.example`;
    const asked = await call("/auth/codes", { method: "POST", body: { email: nobody } });
    expect(asked.status).toBe(202);
    expect(await asked.json()).toEqual({ expires_in: 600 });
    expect(await outboxCount(nobody)).toBe(0);
    const refused = await call("/auth/tokens", {
      method: "POST",
      body: { email: nobody, code: "123456", device_name: "x" },
    });
    expect(await expectError(refused, 400, "Bad Request")).toBe("Bad Request: invalid or expired code");
    // A phone several people hold, none proven, reaches nobody either.
    const shared = "+16505551213";
    for (let i = 0; i < 2; i++) await acmeEmployeeWithPhone("shared", shared);
    expect((await call("/auth/codes", { method: "POST", body: { phone: shared } })).status).toBe(202);
    expect(await outboxCount(shared)).toBe(0);
  });

  it("a deployment without CODE_KEY: the same 503 whether the address reaches someone or not, nothing recorded", async () => {
    const someone = "bob@acme.example";
    const nobody = `${fresh("nobody")}@nowhere.example`;
    const rows = async () =>
      (await env.DB.prepare("select count(*) as n from one_time_codes where address in (?, ?)")
        .bind(someone, nobody)
        .first<{ n: number }>())!.n;
    const before = await rows();
    const key = env.CODE_KEY;
    (env as { CODE_KEY?: string }).CODE_KEY = undefined;
    try {
      const answers = [];
      for (const email of [someone, nobody]) {
        const asked = await call("/auth/codes", { method: "POST", body: { email } });
        answers.push([asked.status, await expectError(asked, 503, "Service Unavailable")]);
      }
      expect(answers[0]).toEqual(answers[1]);
      expect(answers[0]![1]).toMatch(/CODE_KEY/);
    } finally {
      (env as { CODE_KEY?: string }).CODE_KEY = key;
    }
    expect(await rows()).toBe(before);
  });

  it("5 wrong codes void the code; a code of another address is refused; a code signs in once", async () => {
    const email = "carol@globex.example";
    expect((await call("/auth/codes", { method: "POST", body: { email } })).status).toBe(202);
    const code = await codeSentTo(email);
    const wrong = code === "999999" ? "888888" : "999999";
    for (let i = 0; i < 5; i++) {
      const refused = await call("/auth/tokens", { method: "POST", body: { email, code: wrong, device_name: "x" } });
      expect(refused.status).toBe(400);
    }
    const voided = await call("/auth/tokens", { method: "POST", body: { email, code, device_name: "x" } });
    expect(await expectError(voided, 400, "Bad Request")).toMatch(/invalid or expired code/);

    expect((await call("/auth/codes", { method: "POST", body: { email } })).status).toBe(202);
    const fresh = await codeSentTo(email);
    const elsewhere = await call("/auth/tokens", {
      method: "POST",
      body: { email: "bob@acme.example", code: fresh, device_name: "x" },
    });
    expect(elsewhere.status).toBe(400);
    const once = await call("/auth/tokens", { method: "POST", body: { email, code: fresh, device_name: "Carol" } });
    expect(once.status).toBe(201);
    const twice = await call("/auth/tokens", { method: "POST", body: { email, code: fresh, device_name: "Carol" } });
    expect(twice.status).toBe(400);
  });

  it("limits: 5 codes an hour to one address, 20 an hour from one client, each a 429 with Retry-After", async () => {
    const email = `${fresh("limit")}@nowhere.example`;
    for (let i = 0; i < 5; i++) {
      expect((await call("/auth/codes", { method: "POST", body: { email } })).status).toBe(202);
    }
    const sixth = await call("/auth/codes", { method: "POST", body: { email } });
    expect(await expectError(sixth, 429, "Too Many Requests")).toMatch(/5 codes an hour/);
    expect(Number(sixth.headers.get("Retry-After"))).toBeGreaterThan(0);

    const headers = { "CF-Connecting-IP": "203.0.113.77" };
    for (let i = 0; i < 20; i++) {
      const body = { email: `${fresh("ip")}@nowhere.example` };
      expect((await call("/auth/codes", { method: "POST", body, headers })).status).toBe(202);
    }
    const past = await call("/auth/codes", { method: "POST", body: { email: "x@nowhere.example" }, headers });
    expect(await expectError(past, 429, "Too Many Requests")).toMatch(/20 codes an hour/);
  });

  it("20 codes an hour from one client counts an IPv6 client's /64, whatever interface id it picks", async () => {
    const statuses: number[] = [];
    for (let i = 1; i <= 21; i++) {
      const headers = { "CF-Connecting-IP": `2001:db8:d2:1::${i.toString(16)}` };
      const body = { email: `${fresh("v6")}@nowhere.example` };
      statuses.push((await call("/auth/codes", { method: "POST", body, headers })).status);
    }
    expect(statuses.slice(0, 20).every((status) => status === 202)).toBe(true);
    expect(statuses[20]).toBe(429);
  });

  it("a person past their 10 codes of the day: their phone's next code is a 429, a sign-in code a 202 that sends nothing", async () => {
    const id = await acmeEmployeeWithPhone("daily", "+16505553000");
    const token = `pk_test_daily_${crypto.randomUUID().replaceAll("-", "")}`;
    await insertToken(token, { personId: id });
    const me = asAny({ token });
    const email = await emailOf(id);
    const phones: number[] = [];
    for (const number of ["+16505553001", "+16505553002", "+16505553003"]) {
      phones.push((await answer(await me.send("POST", "/me/phones", { phone: number }), 201, addMyPhone)).id);
    }
    for (let i = 0; i < 10; i++) {
      expect((await me.send("POST", `/me/phones/${phones[i % 2]}/verification`)).status).toBe(202);
    }
    const refused = await me.send("POST", `/me/phones/${phones[2]}/verification`);
    expect(await expectError(refused, 429, "Too Many Requests")).toMatch(/10 codes a day/);
    // The 11th by sign-in: the same 202 an unknown address gets, and no message (a 429 would say the address is someone's).
    const before = await outboxCount(email);
    const asked = await call("/auth/codes", { method: "POST", body: { email } });
    expect(asked.status).toBe(202);
    expect(await asked.json()).toEqual({ expires_in: 600 });
    expect(await outboxCount(email)).toBe(before);
  });

  it("bad input: malformed email or phone, both or neither, no device name → 400; a body over 1 MiB → 413", async () => {
    const bad = [{ email: "not an email" }, { phone: "555" }, { email: "bob@acme.example", phone: "+14155550199" }, {}];
    for (const body of bad) {
      expect((await call("/auth/codes", { method: "POST", body })).status, JSON.stringify(body)).toBe(400);
    }
    const noName = await call("/auth/tokens", { method: "POST", body: { email: "bob@acme.example", code: "123456" } });
    expect(noName.status).toBe(400);
    const huge = await call("/auth/codes", { method: "POST", body: { email: "a".repeat(1_100_000) } });
    expect(huge.status).toBe(413);
  });
});

describe("whom an address signs in, once the person has proven one", () => {
  const ADMIN = "pk_test_sign_in_admin";
  beforeAll(() => insertToken(ADMIN, { serviceName: "operator", scopes: ["platform:admin"] }));
  const seat = async (companyId: number, email: string, role: string) => {
    const response = await call(`/internal/companies/${companyId}/members`, {
      method: "POST",
      token: ADMIN,
      body: { first_name: "Gina", last_name: "Both", email, roles: [role] },
    });
    expect(response.status).toBe(201);
    return ((await response.json()) as { person_id: number }).person_id;
  };
  const sent = async (address: { email: string } | { phone: string }) => {
    const to = "email" in address ? address.email : address.phone;
    const before = await outboxCount(to);
    expect((await call("/auth/codes", { method: "POST", body: address })).status).toBe(202);
    return (await outboxCount(to)) - before;
  };

  it("an email one company manages does not sign in a person of another company: no admin borrows another's Admin", async () => {
    // Gina is Globex's Admin and an Acme Viewer.
    const email = `${fresh("gina")}@globex.example`;
    const gina = await seat(2, email, "Admin");
    expect(await seat(1, email, "Viewer")).toBe(gina);
    // Acme's Admin gives her an Acme-managed email the Admin reads, and asks it a code: nothing is sent.
    const evil = `${fresh("attacker")}@evil.example`;
    const put = await as("alice").send("PUT", `/companies/1/employees/${gina}`, { emails: [{ email: evil }] });
    expect(put.status).toBe(200);
    expect(await sent({ email: evil })).toBe(0);
    // Her own way in works, and from then on only what she proved does.
    const signed = await signIn({ email }, "Gina's phone");
    expect((await answer(await call("/me", { token: signed.token }), 200, getMe)).id).toBe(gina);
    expect(await sent({ email: evil })).toBe(0);
  });

  it("after the company that entered her removes her, another company's email still opens nothing (her Admin elsewhere stays hers)", async () => {
    const created = await call("/internal/companies", {
      method: "POST",
      token: ADMIN,
      body: { kind: "employer", name: "Initech", slug: fresh("initech").replaceAll(".", "-") },
    });
    expect(created.status).toBe(201);
    const initech = ((await created.json()) as { id: number }).id;
    // Globex entered Gina; she is also an Acme Viewer and Initech's Admin.
    const email = `${fresh("gina")}@globex.example`;
    const gina = await seat(2, email, "Viewer");
    expect(await seat(1, email, "Viewer")).toBe(gina);
    expect(await seat(initech, email, "Admin")).toBe(gina);
    const evil = `${fresh("attacker")}@evil.example`;
    expect(
      (await as("alice").send("PUT", `/companies/1/employees/${gina}`, { emails: [{ email: evil }] })).status,
    ).toBe(200);
    expect(await sent({ email: evil })).toBe(0);
    // Gina leaves Globex: Acme becomes her oldest company, and its email still reaches no code.
    expect((await as("carol").send("DELETE", `/companies/2/employees/${gina}`)).status).toBe(204);
    expect(await sent({ email: evil })).toBe(0);
  });

  it("an account older than the entering company's record: a managed email opens it only while it belongs to no other company", async () => {
    const email = `${fresh("legacy")}@globex.example`;
    const legacy = await seat(2, email, "Viewer");
    await env.DB.prepare("UPDATE people SET entered_by_company_id = NULL WHERE id = ?").bind(legacy).run();
    expect(await sent({ email })).toBe(1);
    expect(await seat(1, email, "Viewer")).toBe(legacy);
    expect(await sent({ email })).toBe(0);
  });

  it("once a person signed in, a phone their employer types onto their record signs in nobody", async () => {
    const employee = await acmeEmployeeWithPhone("claimed", "+16505557001");
    // Their first sign-in: the number their employer entered is all there is.
    const first = await signIn({ phone: "+16505557001" }, "Their phone");
    expect((await answer(await call("/me", { token: first.token }), 200, getMe)).id).toBe(employee);
    // The employer replaces it with a number its Admin holds: that reaches nobody.
    const put = await as("alice").send("PUT", `/companies/1/employees/${employee}`, {
      phone_numbers: [{ phone_full: "+16505557002", primary: true }],
    });
    expect(put.status).toBe(200);
    expect(await sent({ phone: "+16505557002" })).toBe(0);
    // Before anyone signed in, such a number still opens the account (its first sign-in).
    await acmeEmployeeWithPhone("unclaimed", "+16505557003");
    expect(await sent({ phone: "+16505557003" })).toBe(1);
  });
});

describe("devices", () => {
  it("deleting a device revokes its token: its open stream closes with 4001 within 1 s, its next request is 401", async () => {
    const phone = await signIn({ email: "alice@acme.example" }, "Alice's phone");
    const laptop = await signIn({ email: "alice@acme.example" }, "Alice's laptop");

    const upgrade = await call("/apps/buzz/stream", { token: laptop.token, headers: { Upgrade: "websocket" } });
    expect(upgrade.status).toBe(101);
    const ws = upgrade.webSocket!;
    ws.accept();
    const closed = new Promise<{ code: number; at: number }>((resolve) =>
      ws.addEventListener("close", (event) => resolve({ code: event.code, at: Date.now() })),
    );

    const started = Date.now();
    const deleted = await call(`/me/devices/${laptop.device.id}`, { method: "DELETE", token: phone.token });
    expect(deleted.status).toBe(204);
    const { code, at } = await closed;
    expect(code).toBe(4001);
    expect(at - started).toBeLessThan(1_000);
    expect((await call("/me", { token: laptop.token })).status).toBe(401);
    expect((await call("/me", { token: phone.token })).status).toBe(200);

    // Signing out: a device deletes itself. Another person's device, or one gone already: 404.
    expect((await call(`/me/devices/${laptop.device.id}`, { method: "DELETE", token: phone.token })).status).toBe(404);
    expect((await as("bob").send("DELETE", `/me/devices/${phone.device.id}`)).status).toBe(404);
    expect((await call(`/me/devices/${phone.device.id}`, { method: "DELETE", token: phone.token })).status).toBe(204);
    expect((await call("/me", { token: phone.token })).status).toBe(401);
  });

  it("a new sign-in raises `device` on the person's open streams", async () => {
    const upgrade = await as("carol").get("/apps/buzz/stream", { headers: { Upgrade: "websocket" } });
    expect(upgrade.status).toBe(101);
    const ws = upgrade.webSocket!;
    ws.accept();
    const frames: { type: string; data?: { id: number; name: string } }[] = [];
    ws.addEventListener("message", (event) => frames.push(JSON.parse(String(event.data))));
    const signed = await signIn({ email: "carol@globex.example" }, "Carol's tablet");
    const until = Date.now() + 2_000;
    while (!frames.some((f) => f.type === "device") && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
    expect(frames.find((f) => f.type === "device")?.data).toEqual(signed.device);
    ws.close();
  });

  it("a revocation another isolate wrote: this isolate refuses the token's reads within 1 s and its writes at once", async () => {
    const signed = await signIn({ email: "bob@acme.example" }, "Bob's borrowed phone");
    const token = signed.token;
    expect((await call("/me", { token })).status).toBe(200); // this isolate now holds the token as valid
    // Another isolate's DELETE /me/devices/{id} reaches the person's object; this isolate's caches never hear of it.
    await personObject(DEMO.people.bob).revokeDevice(signed.device.id);
    const write = await call("/apps/buzz/activity", {
      method: "POST",
      token,
      body: chat(DEMO.people.bob, DEMO.people.alice),
    });
    expect(write.status).toBe(401); // a write always asks the object: nothing written
    await new Promise((r) => setTimeout(r, 1_050));
    const read = await call("/me", { token });
    expect((await answer(read, 401, getMe)).error.message).toContain("the bearer token has been revoked");
  });

  it("a stream opened in the second after another isolate revoked the device is refused, not left open", async () => {
    const signed = await signIn({ email: "bob@acme.example" }, "Bob's lost phone");
    const token = signed.token;
    expect((await call("/me", { token })).status).toBe(200); // this isolate holds the token as valid for a second
    await personObject(DEMO.people.bob).revokeDevice(signed.device.id);
    const upgrade = await call("/apps/buzz/stream", { token, headers: { Upgrade: "websocket" } });
    expect(upgrade.status).toBe(401);
    expect(upgrade.webSocket).toBeNull();
  });

  it("a push registration landing after its device's revocation is refused; the revoked device is never woken", async () => {
    const signed = await signIn({ email: "bob@acme.example" }, "Bob's tablet");
    const bob = personObject(DEMO.people.bob);
    await bob.revokeDevice(signed.device.id);
    // As the PUT's object call lands when the revocation came between its check and that call.
    const target = { kind: "fcm", token: `fcm-${crypto.randomUUID()}` } as const;
    expect(await bob.changePush(signed.device.id, target)).toBeNull();
    expect(
      await inPersonObject(
        DEMO.people.bob,
        "SELECT device_id FROM push_registrations WHERE device_id = ?",
        signed.device.id,
      ),
    ).toEqual([]);
  });

  it("a revocation racing a write: once DELETE answered, no write of the token lands", async () => {
    const signed = await signIn({ email: "alice@acme.example" }, "Alice's racing phone");
    const other = await signIn({ email: "alice@acme.example" }, "Alice's other phone");
    const body = chat(DEMO.people.alice, DEMO.people.bob);
    const writes = Array.from({ length: 5 }, () =>
      call("/apps/buzz/activity", {
        method: "POST",
        token: signed.token,
        body: { ...body, message_id: crypto.randomUUID() },
      }),
    );
    const deleted = await call(`/me/devices/${signed.device.id}`, { method: "DELETE", token: other.token });
    expect(deleted.status).toBe(204);
    const statuses = (await Promise.all(writes)).map((r) => r.status);
    expect(statuses.filter((status) => status !== 200 && status !== 401)).toEqual([]);
    const after = await call("/apps/buzz/activity", { method: "POST", token: signed.token, body });
    expect(after.status).toBe(401);
  });

  it("the operator's revoke goes through the API and closes the token's streams too", async () => {
    const operator = `sk_test_devices_operator_${crypto.randomUUID().replaceAll("-", "")}`;
    await insertToken(operator, { serviceName: "operator", scopes: ["platform:admin"] });
    const signed = await signIn({ email: "bob@acme.example" }, "Bob's old phone");
    const upgrade = await call("/apps/buzz/stream", { token: signed.token, headers: { Upgrade: "websocket" } });
    const ws = upgrade.webSocket!;
    ws.accept();
    const closed = new Promise<number>((resolve) => ws.addEventListener("close", (event) => resolve(event.code)));
    const revoked = await call(`/internal/tokens/${signed.device.id}/revoke`, { method: "POST", token: operator });
    expect(revoked.status).toBe(204);
    expect(await closed).toBe(4001);
    expect((await asAny({ token: signed.token }).get("/me")).status).toBe(401);
    expect(
      (await call(`/internal/tokens/${signed.device.id}/revoke`, { method: "POST", token: operator })).status,
    ).toBe(404);
  });
});
