import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it, vi } from "vitest";
import { listActivity } from "../../src/routes/buzz/buzz.routes";
import { listTrustRequests } from "../../src/routes/contacts/contacts.routes";
import { createEmployee } from "../../src/routes/employees/employees.routes";
import { getMe } from "../../src/routes/me/me.routes";
import { answer, as, call, countD1, DEMO, employeeBody, fresh, insertToken, sendChat } from "../helpers";

/**
 * Names travel with facts (docs/architecture.md): the names a chat, a feed
 * page or GET /me shows come from the people's objects, not from D1, and
 * docs/security.md's rule of who sees a name holds — a stranger's names are
 * null, a coworker's are shown, and a person who trusted the reader is named.
 */

afterEach(() => vi.restoreAllMocks());

type Someone = { id: number; token: string };

/** The entry `id` of `who`'s feed. */
async function entry(who: Someone, id: number) {
  const [found] = await answer(
    await call(`/apps/buzz/activity/${id - 1}?limit=1`, { token: who.token }),
    200,
    listActivity,
  );
  expect(found!.id).toBe(id);
  return found!;
}

let next = 96_000;
/** A new person outside every company, with a token. */
async function stranger(firstName: string): Promise<Someone> {
  const id = next++;
  await env.DB.prepare(
    "INSERT INTO people (id, first_name, last_name, created_at, updated_at) VALUES (?1, ?2, 'Travel', ?3, ?3)",
  )
    .bind(id, firstName, Date.now())
    .run();
  const token = `pk_test_names_${id}_${crypto.randomUUID().replaceAll("-", "")}`;
  await insertToken(token, { personId: id });
  return { id, token };
}

const alice: Someone = { id: DEMO.people.alice, token: DEMO.tokens.alice };

describe("names travel with facts", () => {
  it("a rename by the employer reaches the next chat's names, with no D1 statement for the names", async () => {
    const created = await as("alice").send("POST", "/companies/1/employees", employeeBody(fresh("renamed")));
    const { id } = await answer(created, 200, createEmployee);
    const token = `pk_test_renamed_${crypto.randomUUID().replaceAll("-", "")}`;
    await insertToken(token, { personId: id });
    const employee = { id, token };

    // A coworker (Acme): Alice sees the names.
    const first = await sendChat(employee, alice.id);
    expect((await entry(alice, first)).sendable).toMatchObject({ id, first_name: "Dana" });

    const renamed = await as("alice").send("PUT", `/companies/1/employees/${id}`, { first_name: "Fox" });
    expect(renamed.status).toBe(200);

    const d1 = countD1();
    const second = await sendChat(employee, alice.id);
    const queries = d1.queries.filter((sql) => /first_name/i.test(sql));
    vi.restoreAllMocks();
    expect(queries).toEqual([]);
    // The new name on the new chat, and on the old one (a page names each party as its object last told).
    expect((await entry(alice, second)).sendable).toMatchObject({ id, first_name: "Fox" });
    expect((await entry(alice, first)).sendable).toMatchObject({ id, first_name: "Fox" });
    // The employee's own side and GET /me say the same.
    expect((await entry(employee, second)).sendable).toMatchObject({ id, first_name: "Fox" });
    expect((await answer(await call("/me", { token }), 200, getMe)).first_name).toBe("Fox");
    // A chat the other way names Alice to her coworker.
    const back = await sendChat(alice, id);
    expect((await entry(employee, back)).sendable).toMatchObject({ id: alice.id, first_name: "Alice" });
  });

  it("a stranger's chat shows null names on both sides; once the receiver trusts the sender, the sender sees theirs", async () => {
    const sender = await stranger("Sender");
    const receiver = await stranger("Receiver");
    const chat = await sendChat(sender, receiver.id);
    const unnamed = (id: number) => ({ id, first_name: null, middle_name: null, last_name: null });
    expect((await entry(receiver, chat)).sendable).toEqual(unnamed(sender.id));
    expect((await entry(receiver, chat)).receivable).toMatchObject({ id: receiver.id, first_name: "Receiver" });
    expect((await entry(sender, chat)).receivable).toEqual(unnamed(receiver.id));

    // The sender asks for trust; the receiver trusts them: the receiver now knows the sender.
    const asked = await call("/contacts/requests", {
      method: "POST",
      token: sender.token,
      body: { user_id: receiver.id },
    });
    expect(asked.status).toBe(201);
    const requests = await answer(await call("/contacts/requests", { token: receiver.token }), 200, listTrustRequests);
    expect(requests).toEqual([expect.objectContaining({ id: sender.id, first_name: "Sender", last_name: "Travel" })]);
    const trusted = await call(`/contacts/trust/${sender.id}`, {
      method: "POST",
      token: receiver.token,
      body: { trusted: true },
    });
    expect(trusted.status).toBe(201);

    const later = await sendChat(sender, receiver.id);
    expect((await entry(sender, later)).receivable).toMatchObject({ id: receiver.id, first_name: "Receiver" });
    expect((await entry(sender, chat)).receivable).toMatchObject({ id: receiver.id, first_name: "Receiver" });
    // The sender did not trust the receiver: still unnamed to them.
    expect((await entry(receiver, later)).sendable).toEqual(unnamed(sender.id));
  });
});
