import { createExecutionContext, createScheduledController, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it, vi } from "vitest";
import worker from "../../src/index";
import { HOURLY } from "../../src/cron/scheduled";
import type { BackgroundMessage } from "../../src/domain/queue-messages";
import { createEmployee } from "../../src/routes/employees/employees.routes";
import { answer, as, call, codeSentTo, countRows, drainBackground, employeeBody, fresh } from "../helpers";

/*
 * Login invitations (docs/decisions.md, "invite"): an employee created with `invite: true` gets one
 * email at their primary address, naming the company and telling them to sign in with it; the
 * `background` queue sends it after the command, the hourly cron sends what a lost message left.
 */

afterEach(() => vi.restoreAllMocks());

const ACME = "/companies/1/employees";

/** Creates an Acme employee; returns the person and the background messages the request sent. */
async function createWith(payload: Record<string, unknown>) {
  const sent: BackgroundMessage[] = [];
  vi.spyOn(env.BACKGROUND_QUEUE, "send").mockImplementation((async (body: BackgroundMessage) => {
    sent.push(body);
  }) as never);
  const person = await answer(await as("alice").send("POST", ACME, payload), 200, createEmployee);
  vi.restoreAllMocks();
  return { person, sent };
}

const emailsTo = (address: string) =>
  env.DB.prepare(`SELECT body FROM dev_outbox WHERE "to" = ? AND channel = 'email' ORDER BY id`)
    .bind(address)
    .all<{ body: string }>()
    .then((rows) => rows.results.map((row) => row.body));

const invitationOf = (personId: number) =>
  env.DB.prepare("SELECT finished_at, outcome FROM invitations WHERE person_id = ?")
    .bind(personId)
    .first<{ finished_at: number | null; outcome: string | null }>();

async function hourly() {
  const ctx = createExecutionContext();
  await worker.scheduled!(createScheduledController({ cron: HOURLY, scheduledTime: Date.now() }), env, ctx);
  await waitOnExecutionContext(ctx);
}

describe("an employee created with `invite`", () => {
  it("gets one email at the primary address, naming the company; the address then signs them in", async () => {
    const local = fresh("invited");
    const address = `${local}@acme.example`;
    const { person, sent } = await createWith(employeeBody(local, { invite: true }));
    expect(sent).toContainEqual({ kind: "invitations" });
    expect(await emailsTo(address)).toEqual([]);

    await drainBackground({ kind: "invitations" });
    const [email] = await emailsTo(address);
    expect(email).toContain("Acme");
    expect(email).toContain(`sign in with this email address (${address})`);
    expect(await invitationOf(person.id)).toMatchObject({ outcome: "sent" });
    // Once: another run sends nothing more.
    await drainBackground({ kind: "invitations" });
    await hourly();
    expect(await emailsTo(address)).toHaveLength(1);

    // What the email says works: a code to the address signs this person in.
    expect((await call("/auth/codes", { method: "POST", body: { email: address } })).status).toBe(202);
    const signed = await call("/auth/tokens", {
      method: "POST",
      body: { email: address, code: await codeSentTo(address), device_name: "Invited phone" },
    });
    expect(signed.status).toBe(201);
  });

  it("without `invite`, no email and no message", async () => {
    const local = fresh("uninvited");
    const { sent } = await createWith(employeeBody(local));
    expect(sent.filter((body) => body.kind === "invitations")).toEqual([]);
    await drainBackground({ kind: "invitations" });
    expect(await emailsTo(`${local}@acme.example`)).toEqual([]);
  });

  it("a message that could not be sent: the request still answers 200, the hourly cron sends the email", async () => {
    const local = fresh("lost");
    vi.spyOn(env.BACKGROUND_QUEUE, "send").mockRejectedValue(new Error("queue unavailable"));
    const created = await as("alice").send("POST", ACME, employeeBody(local, { invite: true }));
    expect(created.status).toBe(200);
    vi.restoreAllMocks();
    await hourly();
    expect(await emailsTo(`${local}@acme.example`)).toHaveLength(1);
  });

  it("not sent once expired, or to an address that no longer opens the person's account", async () => {
    const late = await createWith(employeeBody(fresh("late"), { invite: true }));
    await env.DB.prepare("UPDATE invitations SET expires_at = ? WHERE person_id = ?")
      .bind(Date.now() - 1000, late.person.id)
      .run();
    const moved = await createWith(employeeBody(fresh("moved"), { invite: true }));
    // The company replaces the person's email before the invitation leaves: the old address opens nothing.
    const old = `${moved.person.emails[0]!.email}`;
    const replaced = await as("alice").send("PUT", `${ACME}/${moved.person.id}`, {
      emails: [{ primary: true, email: `${fresh("new")}@acme.example` }],
    });
    expect(replaced.status).toBe(200);

    await drainBackground({ kind: "invitations" });
    expect(await invitationOf(late.person.id)).toMatchObject({ outcome: "expired" });
    expect(await invitationOf(moved.person.id)).toMatchObject({ outcome: "not-theirs" });
    expect(await emailsTo(late.person.emails[0]!.email)).toEqual([]);
    expect(await emailsTo(old)).toEqual([]);
  });

  it("the email service unavailable: nothing is sent and the invitations stay due for the next hour", async () => {
    const local = fresh("waiting");
    const { person } = await createWith(employeeBody(local, { invite: true }));
    const environment = env.ENVIRONMENT;
    // A deployment without EMAIL_FROM (outside development there is no outbox to fall back on).
    (env as { ENVIRONMENT: string }).ENVIRONMENT = "production";
    try {
      await drainBackground({ kind: "invitations" });
    } finally {
      (env as { ENVIRONMENT: string }).ENVIRONMENT = environment;
    }
    expect(await invitationOf(person.id)).toMatchObject({ finished_at: null, outcome: null });
    expect(await countRows("SELECT count(*) AS n FROM invitations WHERE finished_at IS NULL")).toBeGreaterThan(0);
    await hourly();
    expect(await invitationOf(person.id)).toMatchObject({ outcome: "sent" });
    expect(await emailsTo(`${local}@acme.example`)).toHaveLength(1);
  });
});
