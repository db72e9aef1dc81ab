import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { as, call, codeSentTo, employeeBody, fresh } from "../helpers";

/*
 * One-time codes under requests sent at the same moment (docs/security.md, "Codes"): the five tries
 * of a code and the hourly limits of an address hold however many requests arrive together, since
 * each is charged in the statement that checks it.
 */

async function newEmployeeEmail(tag: string) {
  const local = fresh(tag);
  const created = await as("alice").send("POST", "/companies/1/employees", employeeBody(local, { license: null }));
  expect(created.status).toBe(200);
  return `${local}@acme.example`;
}

const signIn = (email: string, code: string) =>
  call("/auth/tokens", { method: "POST", body: { email, code, device_name: "race" } }).then((r) => r.status);

describe("a code's tries, guessed all at once", () => {
  it("40 guesses sent together get five tries between them: the right code sent among them is refused", async () => {
    const email = await newEmployeeEmail("race");
    expect((await call("/auth/codes", { method: "POST", body: { email } })).status).toBe(202);
    const real = await codeSentTo(email);
    const wrong = (i: number) => String((Number(real) + 1 + i) % 1_000_000).padStart(6, "0");
    // 39 wrong guesses, then the right one, all at once.
    const statuses = await Promise.all(
      [...Array.from({ length: 39 }, (_, i) => wrong(i)), real].map((code) => signIn(email, code)),
    );
    expect(statuses.filter((status) => status === 201).length).toBeLessThanOrEqual(1);
    const row = await env.DB.prepare(
      "SELECT tries, spent_at FROM one_time_codes WHERE address = ? AND code_hash IS NOT NULL ORDER BY id DESC LIMIT 1",
    )
      .bind(email)
      .first<{ tries: number; spent_at: number | null }>();
    expect(row!.tries).toBe(5);
    // The code is void now, right or not.
    expect(await signIn(email, real)).toBe(400);
  });

  it("five wrong tries void a code: the right one after them is refused", async () => {
    const email = await newEmployeeEmail("tries");
    expect((await call("/auth/codes", { method: "POST", body: { email } })).status).toBe(202);
    const real = await codeSentTo(email);
    const wrong = String((Number(real) + 1) % 1_000_000).padStart(6, "0");
    for (let i = 0; i < 5; i++) expect(await signIn(email, wrong)).toBe(400);
    expect(await signIn(email, real)).toBe(400);
  });
});

describe("an address's codes, asked all at once", () => {
  it("30 requests for one address at the same moment send at most five codes", async () => {
    const email = await newEmployeeEmail("burst");
    const sent = async () =>
      (await env.DB.prepare('SELECT count(*) AS n FROM dev_outbox WHERE "to" = ?').bind(email).first<{ n: number }>())!
        .n;
    const statuses = await Promise.all(
      Array.from({ length: 30 }, () => call("/auth/codes", { method: "POST", body: { email } }).then((r) => r.status)),
    );
    expect(statuses.filter((status) => status === 202)).toHaveLength(5);
    expect(statuses.filter((status) => status === 429)).toHaveLength(25);
    // The messages leave after the answers.
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(await sent()).toBe(5);
    expect(
      await env.DB.prepare("SELECT count(*) AS n FROM one_time_codes WHERE address = ?")
        .bind(email)
        .first<{ n: number }>(),
    ).toEqual({ n: 5 });
  });
});
