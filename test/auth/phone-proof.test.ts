import { env } from "cloudflare:workers";
import { afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { listCompanyPhones } from "../../src/routes/admin/phones.routes";
import { addCompanyPhone } from "../../src/routes/companies/phones.routes";
import { syncContacts } from "../../src/routes/contacts/contacts.routes";
import { addMyPhone, listMyPhones } from "../../src/routes/me/me.routes";
import {
  acmeEmployeeWithPhone,
  answer,
  as,
  asAny,
  call,
  codeSentTo,
  countInPersonObject,
  DEMO,
  expectError,
  insertToken,
  provePhone,
  employerSetsPhones,
  spyOnD1,
} from "../helpers";

/*
 * Proving a phone (docs/security.md, "Proving a phone"): the audit's reproductions. A confirmation needs
 * the code sent to the number; possession wins; an employer's edits never carry a confirmation; a phone
 * reaches only its proven owner; a company never claims a person's number.
 */

const OPERATOR = `sk_test_proof_operator_${crypto.randomUUID().replaceAll("-", "")}`;

beforeAll(async () => {
  await insertToken(OPERATOR, { serviceName: "operator", scopes: ["platform:admin"] });
});

/** Acme (Alice, its Admin) enters a new employee holding `phone`; the employee gets a token of their own. */
async function employee(phone: string) {
  const id = await acmeEmployeeWithPhone("vic", phone, { first_name: "Vic" });
  const token = `pk_test_vic_${crypto.randomUUID().replaceAll("-", "")}`;
  await insertToken(token, { personId: id });
  return { id, token, api: asAny({ token }) };
}

const phonesOf = async (api: { get: (path: string) => Promise<Response> }) =>
  answer(await api.get("/me/phones"), 200, listMyPhones);

/** Alice (Acme's Admin) puts `numbers` on her own record, as the audit did. */
const setAlicesPhones = (...numbers: string[]) => employerSetsPhones(DEMO.people.alice, ...numbers);

describe("a confirmation needs the code sent to the number", () => {
  it("an Admin who types an employee's number onto her own record cannot confirm it, bare or guessed; its holder can", async () => {
    const number = "+16505557775";
    const vic = await employee(number);
    await setAlicesPhones(number);
    const [alices] = await phonesOf(as("alice"));
    expect(alices).toMatchObject({ phone_full: number, confirmed: false });

    // The audit's bare confirm: now a 400, and nothing changes.
    const bare = await as("alice").send("POST", `/me/phones/${alices!.id}/confirm`);
    expect(await expectError(bare, 400, "Bad Request")).toMatch(/invalid or expired code/);
    const guessed = await as("alice").send("POST", `/me/phones/${alices!.id}/confirm`, { code: "123456" });
    expect(await expectError(guessed, 400, "Bad Request")).toMatch(/invalid or expired code/);
    expect((await phonesOf(as("alice")))[0]).toMatchObject({ confirmed: false });

    // Vic, who has the phone, reads the code and confirms: no 409, ever.
    const [vics] = await phonesOf(vic.api);
    expect((await vic.api.send("POST", `/me/phones/${vics!.id}/verification`)).status).toBe(202);
    const code = await codeSentTo(number);
    const confirmed = await vic.api.send("POST", `/me/phones/${vics!.id}/confirm`, { code });
    expect(confirmed.status).toBe(200);
    expect(await confirmed.json()).toMatchObject({ id: vics!.id, phone_full: number, confirmed: true });

    // Bob's trust request by that phone reaches Vic, not the Admin.
    const asked = await as("bob").send("POST", "/contacts/requests", { phone: number, contact_reason: "hello Vic" });
    expect(asked.status).toBe(201);
    // Delivered after the answer.
    await expect.poll(() => countInPersonObject(vic.id, "select count(*) as n from trust_requests")).toBe(1);
    expect(
      await countInPersonObject(
        DEMO.people.alice,
        "select count(*) as n from trust_requests where requester_id = ?",
        DEMO.people.bob,
      ),
    ).toBe(0);
    await setAlicesPhones();
  });

  it("an employer cannot move a number its holder proved: it stays theirs; typed onto another record it is unconfirmed there", async () => {
    const number = "+16505557776";
    const vic = await employee(number);
    const [vics] = await phonesOf(vic.api);
    expect((await provePhone({ token: vic.token }, vics!.id)).status).toBe(200);

    // The Admin clears Vic's phones and puts the number on her own record (before: Vic lost it). It stays
    // his, and his record's primary: a list holds exactly one.
    const cleared = await as("alice").send("PUT", `/companies/1/employees/${vic.id}`, { phone_numbers: [] });
    expect(cleared.status).toBe(200);
    expect(await phonesOf(vic.api)).toEqual([
      expect.objectContaining({ phone_full: number, confirmed: true, primary: true }),
    ]);
    await setAlicesPhones(number);
    const [alices] = await phonesOf(as("alice"));
    expect(alices).toMatchObject({ phone_full: number, confirmed: false });
    const bare = await as("alice").send("POST", `/me/phones/${alices!.id}/confirm`);
    expect(bare.status).toBe(400);
    // Vic's is still the confirmed one.
    expect((await vic.api.send("POST", "/me/phones", { phone: number })).status).toBe(200);
    await setAlicesPhones();
  });

  it("codes: 5 wrong tries void the code; a code of another phone is refused; a code is spent once", async () => {
    const vic = await employee("+16505557777");
    const [phone] = await phonesOf(vic.api);
    expect((await vic.api.send("POST", `/me/phones/${phone!.id}/verification`)).status).toBe(202);
    const code = await codeSentTo("+16505557777");
    const wrong = code === "000000" ? "111111" : "000000";
    for (let i = 0; i < 5; i++) {
      const refused = await vic.api.send("POST", `/me/phones/${phone!.id}/confirm`, { code: wrong });
      expect(await expectError(refused, 400, "Bad Request")).toMatch(/invalid or expired code/);
    }
    expect((await vic.api.send("POST", `/me/phones/${phone!.id}/confirm`, { code })).status).toBe(400);

    // A fresh code works once; another phone's code does not.
    const other = await vic.api.send("POST", "/me/phones", { phone: "+16505557778" });
    const otherId = (await answer(other, 201, addMyPhone)).id;
    expect((await vic.api.send("POST", `/me/phones/${otherId}/verification`)).status).toBe(202);
    const otherCode = await codeSentTo("+16505557778");
    expect((await vic.api.send("POST", `/me/phones/${phone!.id}/verification`)).status).toBe(202);
    const fresh = await codeSentTo("+16505557777");
    if (otherCode !== fresh) {
      expect((await vic.api.send("POST", `/me/phones/${phone!.id}/confirm`, { code: otherCode })).status).toBe(400);
    }
    expect((await vic.api.send("POST", `/me/phones/${phone!.id}/confirm`, { code: fresh })).status).toBe(200);
    expect((await vic.api.send("POST", `/me/phones/${phone!.id}/confirm`, { code: fresh })).status).toBe(400);
  });

  it("the SMS ends with the Web OTP line; a phone outside the allowed countries gets 400 and nothing is sent", async () => {
    const vic = await employee("+16505557779");
    const [phone] = await phonesOf(vic.api);
    expect((await vic.api.send("POST", `/me/phones/${phone!.id}/verification`)).status).toBe(202);
    const row = await env.DB.prepare('select body from dev_outbox where "to" = ? order by id desc')
      .bind("+16505557779")
      .first<{ body: string }>();
    expect(row!.body).toMatch(/^\d{6} is your verification code\. It expires in 10 minutes\.\n\n@api\.test #\d{6}$/);

    // A UK number: the demo pool has no +44 number, so codes are not sent there.
    const uk = await vic.api.send("POST", "/me/phones", { phone: "+447911123456" });
    const ukId = (await answer(uk, 201, addMyPhone)).id;
    const refused = await vic.api.send("POST", `/me/phones/${ukId}/verification`);
    expect(await expectError(refused, 400, "Bad Request")).toMatch(/codes are not sent to this country/);
    const sent = await env.DB.prepare('select count(*) as n from dev_outbox where "to" = ?')
      .bind("+447911123456")
      .first<{ n: number }>();
    expect(sent!.n).toBe(0);
  });

  it("at most 5 codes an hour to one number: the 6th is a 429 with Retry-After", async () => {
    const vic = await employee("+16505557780");
    const [phone] = await phonesOf(vic.api);
    for (let i = 0; i < 5; i++) {
      expect((await vic.api.send("POST", `/me/phones/${phone!.id}/verification`)).status).toBe(202);
    }
    const refused = await vic.api.send("POST", `/me/phones/${phone!.id}/verification`);
    expect(await expectError(refused, 429, "Too Many Requests")).toMatch(/5 codes an hour/);
    expect(Number(refused.headers.get("Retry-After"))).toBeGreaterThan(3000);
  });

  it("bad input: a malformed phone 400, another person's phone 404, a secure number of the pool 409", async () => {
    expect((await as("bob").send("POST", "/me/phones", { phone: "12345" })).status).toBe(400);
    expect((await as("bob").send("POST", "/me/phones", {})).status).toBe(400);
    expect((await as("bob").send("POST", "/me/phones", { country_code: "", number: "4155550100" })).status).toBe(400);
    const [bobs] = await phonesOf(as("bob"));
    expect((await as("carol").send("POST", `/me/phones/${bobs!.id}/verification`)).status).toBe(404);
    const pool = await env.DB.prepare("select e164 from secure_numbers limit 1").first<{ e164: string }>();
    const taken = await as("bob").send("POST", "/me/phones", { phone: pool!.e164 });
    expect(taken.status).toBe(409);
  });
});

describe("adding a phone twice", () => {
  /** An employee holding no seat (the file's other tests need Acme's). */
  async function seatless(phone: string) {
    const id = await acmeEmployeeWithPhone("twice", phone, { license: null });
    const token = `pk_test_twice_${crypto.randomUUID().replaceAll("-", "")}`;
    await insertToken(token, { personId: id });
    return { id, token, api: asAny({ token }) };
  }

  it("two adds of one number at once (a double tap) keep one row, answered to both", async () => {
    const vic = await seatless("+16505554002");
    const number = "+16505554003";
    const answers = await Promise.all([
      vic.api.send("POST", "/me/phones", { phone: number }),
      vic.api.send("POST", "/me/phones", { phone: number }),
    ]);
    expect(answers.map((response) => response.status).sort()).toEqual([200, 201]);
    const ids = await Promise.all(answers.map(async (response) => ((await response.json()) as { id: number }).id));
    expect(ids[0]).toBe(ids[1]);
    const phones = await answer(await vic.api.get("/me/phones"), 200, listMyPhones);
    expect(phones.filter((phone) => phone.phone_full === number)).toHaveLength(1);
  });

  it("a retry with its Idempotency-Key replays the first answer", async () => {
    const vic = await seatless("+16505554006");
    const options = { headers: { "Idempotency-Key": crypto.randomUUID() } };
    const first = await vic.api.send("POST", "/me/phones", { phone: "+16505554007" }, options);
    const added = await answer(first, 201, addMyPhone);
    const retry = await vic.api.send("POST", "/me/phones", { phone: "+16505554007" }, options);
    expect(retry.status).toBe(201);
    expect(retry.headers.get("Idempotent-Replayed")).toBe("true");
    expect(await retry.json()).toEqual(added);
  });

  it("a number held twice (rows an older version wrote): proving either row works, never a 500", async () => {
    const vic = await seatless("+16505554004");
    const number = "+16505554005";
    const first = await answer(await vic.api.send("POST", "/me/phones", { phone: number }), 201, addMyPhone);
    await env.DB.prepare(
      `INSERT INTO person_phones (person_id, country_code, phone_number, e164, "primary", confirmed) VALUES (?, '1', ?, ?, 0, 0)`,
    )
      .bind(vic.id, number.slice(2), number)
      .run();
    const twin = (await answer(await vic.api.get("/me/phones"), 200, listMyPhones)).find(
      (phone) => phone.phone_full === number && phone.id !== first.id,
    )!;
    for (const id of [first.id, twin.id]) expect((await provePhone({ token: vic.token }, id)).status).toBe(200);
    const rows = (await answer(await vic.api.get("/me/phones"), 200, listMyPhones)).filter(
      (phone) => phone.phone_full === number,
    );
    expect(rows.map((phone) => [phone.id, phone.confirmed])).toEqual([
      [first.id, false],
      [twin.id, true],
    ]);
    // Signing in by the number works too: one row of it confirmed, the oldest.
    expect((await call("/auth/codes", { method: "POST", body: { phone: number } })).status).toBe(202);
    const signed = await call("/auth/tokens", {
      method: "POST",
      body: { phone: number, code: await codeSentTo(number), device_name: "Twin" },
    });
    expect(signed.status).toBe(201);
    const after = (await answer(await vic.api.get("/me/phones"), 200, listMyPhones)).filter(
      (phone) => phone.phone_full === number,
    );
    expect(after.map((phone) => [phone.id, phone.confirmed])).toEqual([
      [first.id, true],
      [twin.id, false],
    ]);
  });
});

describe("a phone the person proved is theirs", () => {
  it("survives their employer's replacement of their phones, and still signs them in", async () => {
    const id = await acmeEmployeeWithPhone("own", "+16505554030", { license: null });
    const token = `pk_test_own_${crypto.randomUUID().replaceAll("-", "")}`;
    await insertToken(token, { personId: id });
    const api = asAny({ token });
    const personal = "+16505554032";
    const added = await answer(await api.send("POST", "/me/phones", { phone: personal }), 201, addMyPhone);
    expect((await provePhone({ token }, added.id)).status).toBe(200);

    // The employer changes the work number it entered, naming nothing of the person's own phone.
    const put = await as("alice").send("PUT", `/companies/1/employees/${id}`, {
      phone_numbers: [{ phone_full: "+16505554031", primary: true }],
    });
    expect(put.status).toBe(200);

    const phones = await answer(await api.get("/me/phones"), 200, listMyPhones);
    expect(phones.map((phone) => [phone.phone_full, phone.confirmed, phone.primary]).sort()).toEqual([
      ["+16505554031", false, true],
      [personal, true, false],
    ]);
    expect((await call("/auth/codes", { method: "POST", body: { phone: personal } })).status).toBe(202);
    const signed = await call("/auth/tokens", {
      method: "POST",
      body: { phone: personal, code: await codeSentTo(personal), device_name: "Own phone" },
    });
    expect(signed.status).toBe(201);
  });
});

describe("possession wins", () => {
  it("proving a number someone else confirmed takes it; their stream hears `phones`; the operator can release it", async () => {
    const number = "+16505557781";
    const first = await employee(number);
    const second = await employee(number);
    const [a] = await phonesOf(first.api);
    const [b] = await phonesOf(second.api);
    expect((await provePhone({ token: first.token }, a!.id)).status).toBe(200);

    const stream = await call("/apps/buzz/stream", { token: first.token, headers: { Upgrade: "websocket" } });
    expect(stream.status).toBe(101);
    const ws = stream.webSocket!;
    ws.accept();
    const frames: string[] = [];
    ws.addEventListener("message", (event) => frames.push(String(event.data)));

    expect((await provePhone({ token: second.token }, b!.id)).status).toBe(200);
    expect((await phonesOf(first.api))[0]).toMatchObject({ phone_full: number, confirmed: false });
    expect((await phonesOf(second.api))[0]).toMatchObject({ phone_full: number, confirmed: true });
    await waitFor(() => frames.some((frame) => JSON.parse(frame).type === "phones"));
    ws.close();

    const released = await call(`/internal/phones/${encodeURIComponent(number)}/release`, {
      method: "POST",
      token: OPERATOR,
    });
    expect(released.status).toBe(200);
    expect(await released.json()).toEqual({ released: 1 });
    expect((await phonesOf(second.api))[0]).toMatchObject({ confirmed: false });
    const bad = await call("/internal/phones/not-a-number/release", { method: "POST", token: OPERATOR });
    expect(bad.status).toBe(400);
    expect((await as("bob").send("POST", `/internal/phones/${encodeURIComponent(number)}/release`)).status).toBe(403);
  });
});

describe("an employer's phone edit in flight while a confirmation changes", () => {
  afterEach(() => vi.restoreAllMocks());
  /** The employer's PUT of `person`'s phones, with `meanwhile` run between its reads and its batch. */
  async function putRacing(person: number, phones: string[], meanwhile: () => Promise<void>) {
    let fired = false;
    spyOnD1(async (statements) => {
      if (fired || !statements.some((s) => /delete from "person_phones" where \(?"person_phones"."person_id"/i.test(s)))
        return;
      fired = true;
      await meanwhile();
    });
    const body = { phone_numbers: phones.map((phone_full, i) => ({ phone_full, primary: i === 0 })) };
    const put = await as("alice").send("PUT", `/companies/1/employees/${person}`, body);
    vi.restoreAllMocks();
    expect(fired).toBe(true);
    return put;
  }
  const signInByPhone = async (phone: string) => {
    expect((await call("/auth/codes", { method: "POST", body: { phone } })).status).toBe(202);
    const code = await codeSentTo(phone);
    expect((await call("/auth/tokens", { method: "POST", body: { phone, code, device_name: "p" } })).status).toBe(201);
    // Signing in by phone proves it.
    await expect
      .poll(
        async () =>
          (await env.DB.prepare("SELECT count(*) AS n FROM person_phones WHERE e164 = ? AND confirmed = 1")
            .bind(phone)
            .first<{ n: number }>())!.n,
      )
      .toBe(1);
  };

  it("the operator's release (a SIM swap) lands first: 409, the confirmation stays released, and a resend writes none", async () => {
    const number = "+16505558821";
    const person = await acmeEmployeeWithPhone("swapped", number, { license: null });
    await signInByPhone(number);
    const phones = [number, "+16505558823"];
    const put = await putRacing(person, phones, async () => {
      const released = await call(`/internal/phones/${encodeURIComponent(number)}/release`, {
        method: "POST",
        token: OPERATOR,
      });
      expect(released.status).toBe(200);
    });
    await expectError(put, 409, "Conflict");
    const confirmed = () =>
      env.DB.prepare("SELECT confirmed FROM person_phones WHERE e164 = ? AND person_id = ?")
        .bind(number, person)
        .first();
    expect(await confirmed()).toEqual({ confirmed: 0 });
    const again = await as("alice").send("PUT", `/companies/1/employees/${person}`, {
      phone_numbers: phones.map((phone_full, i) => ({ phone_full, primary: i === 0 })),
    });
    expect(again.status).toBe(200);
    expect(await confirmed()).toEqual({ confirmed: 0 });
  });

  it("another person proves the number first: 409, not a 500, and the number stays confirmed by them alone", async () => {
    const number = "+16505558811";
    const person = await acmeEmployeeWithPhone("holder", number, { license: null });
    await signInByPhone(number);
    const other = await acmeEmployeeWithPhone("recycled", "+16505558812", { license: null });
    const token = `pk_test_proof_recycled_${crypto.randomUUID().replaceAll("-", "")}`;
    await insertToken(token, { personId: other });
    const api = asAny({ token });
    const added = await api.send("POST", "/me/phones", { phone: number });
    const phoneId = ((await added.json()) as { id: number }).id;
    expect((await api.send("POST", `/me/phones/${phoneId}/verification`)).status).toBe(202);
    const code = await codeSentTo(number);
    const put = await putRacing(person, [number, "+16505558813"], async () => {
      expect((await api.send("POST", `/me/phones/${phoneId}/confirm`, { code })).status).toBe(200);
    });
    await expectError(put, 409, "Conflict");
    const rows = await env.DB.prepare(
      "SELECT person_id, confirmed FROM person_phones WHERE e164 = ? ORDER BY person_id",
    )
      .bind(number)
      .all();
    expect(rows.results).toEqual([
      { person_id: person, confirmed: 0 },
      { person_id: other, confirmed: 1 },
    ]);
  });
});

describe("who a phone reaches", () => {
  it("a contact links the proven owner, not a lower id an employer typed the number onto", async () => {
    // Alice (id 1, below Bob's 2) gets Bob's proven demo number from her company.
    await setAlicesPhones(DEMO.bobPhone);
    const synced = await as("carol").send("POST", "/contacts/sync", [
      { display_name: "Bob", phone_numbers: [DEMO.bobPhone] },
    ]);
    const [contact] = await answer(synced, 200, syncContacts);
    expect(contact!.user_id).toBe(DEMO.people.bob);
    await setAlicesPhones();
  });

  it("a contact of a number nobody proved links nobody", async () => {
    await employee("+16505557782");
    const synced = await as("carol").send("POST", "/contacts/sync", [
      { display_name: "Someone", phone_numbers: ["+16505557782"] },
    ]);
    const [contact] = await answer(synced, 200, syncContacts);
    expect(contact).toMatchObject({ user_id: null, connected: false });
  });
});

describe("a company never claims a person's number", () => {
  it("a pool secure number or a proven phone: 409; a claim that became a person's is marked and cannot be verified", async () => {
    const pool = await env.DB.prepare("select e164 from secure_numbers limit 1").first<{ e164: string }>();
    const claim = (phone_full: string) => as("alice").send("POST", "/companies/1/phones", { phone_full });
    expect(await expectError(await claim(pool!.e164), 409, "Conflict")).toMatch(/belongs to a person/);
    expect(await expectError(await claim(DEMO.bobPhone), 409, "Conflict")).toMatch(/belongs to a person/);

    // Claimed while nobody had proven it; then its holder proves it.
    const number = "+16505557783";
    const made = await claim(number);
    const { id } = await answer(made, 201, addCompanyPhone);
    const vic = await employee(number);
    const [phone] = await phonesOf(vic.api);
    expect((await provePhone({ token: vic.token }, phone!.id)).status).toBe(200);
    const listed = await call("/internal/company-phones?per_page=1000", { token: OPERATOR });
    const mine = (await answer(listed, 200, listCompanyPhones)).find((p) => p.id === id);
    expect(mine).toMatchObject({ belongs_to_person: true });
    const verified = await call(`/internal/company-phones/${id}/verify`, { method: "POST", token: OPERATOR });
    expect(await expectError(verified, 409, "Conflict")).toMatch(/belongs to a person/);
  });
});

/* ---------- helpers ---------- */

async function waitFor(done: () => boolean, ms = 2_000) {
  const until = Date.now() + ms;
  while (!done()) {
    if (Date.now() > until) throw new Error("timed out");
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
