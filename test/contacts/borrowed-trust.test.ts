import { describe, expect, it } from "vitest";
import { trustLookupGet } from "../../src/routes/buzz/buzz.routes";
import { createEmployee } from "../../src/routes/employees/employees.routes";
import { listMyPhones } from "../../src/routes/me/me.routes";
import {
  answer,
  as,
  call,
  countInPersonObject,
  DEMO,
  employeeBody,
  expectError,
  fresh,
  provePhone,
  secureNumberOf,
  trustIndexSettledFor,
  employerSetsPhones,
} from "../helpers";

/*
 * Trust that cannot be borrowed (docs/security.md, "Borrowed trust"): a
 * person's trust covers their secure number and the phones they proved
 * with a code, and a trust request reaches one person at most.
 */

/** Would a call from `from` to `to` ring? (the telephony provider's question) */
async function rings(to: string, from: string) {
  // Once the index holds every change so far (a key changed twice within a second: written when it has passed).
  await trustIndexSettledFor(to);
  const response = await call(`/apps/buzz/trust-lookup?${new URLSearchParams({ number: to, inbound: from })}`, {
    token: DEMO.tokens.telephony,
  });
  const { trusted, user_id } = await answer(response, 200, trustLookupGet);
  return { trusted, user_id };
}

async function bobsPhones() {
  return answer(await as("bob").get("/me/phones"), 200, listMyPhones);
}

const setBobsPhones = (...numbers: string[]) => employerSetsPhones(DEMO.people.bob, ...numbers);

describe("an employer cannot lend a number the trust others gave its employee", () => {
  it("Carol trusts Bob: Alice changing Bob's phone does not make the new number ring Carol until Bob confirms it", async () => {
    const carol = (await secureNumberOf("carol")).e164;
    expect((await as("bob").send("POST", "/contacts/requests", { user_id: DEMO.people.carol })).status).toBe(201);
    expect((await as("carol").send("POST", `/contacts/trust/${DEMO.people.bob}`, { trusted: 1 })).status).toBe(201);
    // Bob's demo phone is one he confirmed: it rings Carol.
    expect(await rings(carol, DEMO.bobPhone)).toEqual({ trusted: true, user_id: DEMO.people.carol });

    // The audit's reproduction: the Admin of Bob's company gives him any number it likes. It rings
    // nobody until Bob proves it; the number Bob proved stays his, and still rings Carol.
    const borrowed = "+14155550142";
    await setBobsPhones(borrowed);
    expect(await rings(carol, borrowed)).toEqual({ trusted: false, user_id: DEMO.people.carol });
    expect(await rings(carol, DEMO.bobPhone)).toEqual({ trusted: true, user_id: DEMO.people.carol });

    const phone = (await bobsPhones()).find((held) => held.phone_full === borrowed);
    expect(phone).toMatchObject({ phone_full: borrowed, confirmed: false });
    const confirmed = await provePhone("bob", phone!.id);
    expect(confirmed.status).toBe(200);
    expect(await confirmed.json()).toMatchObject({ id: phone!.id, confirmed: true });
    expect(await rings(carol, borrowed)).toEqual({ trusted: true, user_id: DEMO.people.carol });

    // The employer sending the list again keeps what Bob confirmed; a number it adds is not confirmed.
    const added = "+14155550143";
    await setBobsPhones(borrowed, added);
    expect((await bobsPhones()).map(({ phone_full, confirmed }) => ({ phone_full, confirmed }))).toEqual([
      { phone_full: DEMO.bobPhone, confirmed: true },
      { phone_full: borrowed, confirmed: true },
      { phone_full: added, confirmed: false },
    ]);
    expect(await rings(carol, borrowed)).toEqual({ trusted: true, user_id: DEMO.people.carol });
    expect(await rings(carol, added)).toEqual({ trusted: false, user_id: DEMO.people.carol });
    await setBobsPhones(DEMO.bobPhone);
  });

  it("a phone is confirmed only by whoever proves it, and by one person at most: possession wins", async () => {
    // Bob's demo number stayed his through the first test's edits: confirmed.
    const [bobs] = await bobsPhones();
    expect(bobs).toMatchObject({ phone_full: DEMO.bobPhone, confirmed: true });
    expect((await provePhone("bob", bobs!.id)).status).toBe(200);
    expect(
      await expectError(
        await as("carol").send("POST", `/me/phones/${bobs!.id}/confirm`, { code: "000000" }),
        404,
        "Not Found",
      ),
    ).toMatch(/phone \d+ does not exist/);
    // Alice holds the same number (her company entered it): a bare or guessed confirm changes nothing.
    const alice = await as("alice").send("PUT", `/companies/1/employees/${DEMO.people.alice}`, {
      phone_numbers: [{ phone_full: bobs!.phone_full, primary: true }],
    });
    expect(alice.status).toBe(200);
    const [alices] = await answer(await as("alice").get("/me/phones"), 200, listMyPhones);
    expect(alices).toMatchObject({ phone_full: bobs!.phone_full, confirmed: false });
    expect((await bobsPhones())[0]).toMatchObject({ phone_full: bobs!.phone_full, confirmed: true });
    // Proving it (the code reaches whoever has the phone) takes it: Bob's confirmation ends.
    expect((await provePhone("alice", alices!.id)).status).toBe(200);
    expect((await bobsPhones())[0]).toMatchObject({ phone_full: bobs!.phone_full, confirmed: false });
    expect((await provePhone("bob", bobs!.id)).status).toBe(200);
    expect((await bobsPhones())[0]).toMatchObject({ confirmed: true });
    expect((await call("/me/phones", { token: DEMO.tokens.telephony })).status).toBe(403);
  });
});

describe("a trust request reaches one person at most", () => {
  it("a number several people hold and none proved reaches nobody, answered as for a number nobody holds", async () => {
    const frontDesk = "+14155550177";
    const ids: number[] = [];
    for (let i = 0; i < 3; i++) {
      const created = await as("alice").send(
        "POST",
        "/companies/1/employees",
        employeeBody(fresh("desk"), { phone_numbers: [{ phone_full: frontDesk, primary: true }] }),
      );
      ids.push((await answer(created, 200, createEmployee)).id);
    }
    const held = await as("carol").send("POST", "/contacts/requests", { phone: frontDesk, contact_reason: "hi" });
    const nobody = await as("carol").send("POST", "/contacts/requests", {
      phone: "+14155550178",
      contact_reason: "hi",
    });
    expect([held.status, nobody.status]).toEqual([201, 201]);
    expect(await held.json()).toEqual(await nobody.json());
    for (const id of ids) expect(await countInPersonObject(id, "select count(*) as n from trust_requests")).toBe(0);
  });

  it("by phone it reaches the one person who confirmed it, and only them", async () => {
    const shared = "+14155550188";
    const ids: number[] = [];
    for (let i = 0; i < 2; i++) {
      const created = await as("alice").send(
        "POST",
        "/companies/1/employees",
        employeeBody(fresh("shared"), { phone_numbers: [{ phone_full: shared, primary: true }] }),
      );
      ids.push((await answer(created, 200, createEmployee)).id);
    }
    // Bob holds it too, and proves it.
    await setBobsPhones(shared);
    const phone = (await bobsPhones()).find((held) => held.phone_full === shared);
    expect((await provePhone("bob", phone!.id)).status).toBe(200);
    expect((await as("carol").send("POST", "/contacts/requests", { phone: shared, contact_reason: "hi" })).status).toBe(
      201,
    );
    expect(
      await countInPersonObject(
        DEMO.people.bob,
        "select count(*) as n from trust_requests where requester_id = ?",
        DEMO.people.carol,
      ),
    ).toBe(1);
    for (const id of ids) expect(await countInPersonObject(id, "select count(*) as n from trust_requests")).toBe(0);
    await setBobsPhones(DEMO.bobPhone);
  });

  it("a number one person holds, unproven, reaches nobody (the holder never proved it is theirs)", async () => {
    const own = "+14155550166";
    const created = await as("alice").send(
      "POST",
      "/companies/1/employees",
      employeeBody(fresh("solo"), { phone_numbers: [{ phone_full: own, primary: true }] }),
    );
    const { id } = await answer(created, 200, createEmployee);
    expect((await as("carol").send("POST", "/contacts/requests", { phone: own, contact_reason: "hi" })).status).toBe(
      201,
    );
    expect(await countInPersonObject(id, "select count(*) as n from trust_requests")).toBe(0);
  });
});
