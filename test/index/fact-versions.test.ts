import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { createEmployee } from "../../src/routes/employees/employees.routes";
import {
  answer,
  as,
  call,
  countRows,
  DEMO,
  employeeBody,
  fresh,
  indexKeysWritten,
  insertToken,
  personObject,
  secureNumberOf,
} from "../helpers";

/*
 * Facts are versioned (docs/architecture.md, "Fact versions"): a person's
 * object ignores facts older than those it holds, so a read from a lagging
 * replica can never roll the trust index back.
 */

async function aliceNumber(): Promise<string> {
  return (await secureNumberOf("alice")).e164;
}

describe("fact versions", () => {
  it("a stale miss cannot bring back a company the person left (the stale-replica rollback)", async () => {
    const e164 = await aliceNumber();
    const alice = DEMO.people.alice;
    const object = personObject(alice);
    const version = await countRows("SELECT facts_version AS n FROM people WHERE id = ?", alice);
    // D1 says (version + 1): Alice belongs to no company any more.
    await object.takeFacts({ personId: alice, e164, companies: [], version: version + 1 });
    // Her receiver record may have been written less than a second ago: rewritten once that second has passed.
    await indexKeysWritten(alice);
    const left = JSON.parse((await env.TRUST_INDEX.get(`rcv:${e164}`))!) as { c: number[] };
    expect(left.c).toEqual([]);
    // A lookup that missed her keys read a lagging replica: the older facts still list Acme.
    const answered = await object.receiverRecords(
      { personId: alice, e164, companies: [DEMO.companies.acme], version },
      null,
      [`rcv:${e164}`],
    );
    expect(answered.receiver.c).toEqual([]);
    expect(JSON.parse((await object.indexValues())[`rcv:${e164}`]!)).toMatchObject({ c: [] });
    // The same or a newer version is taken.
    await object.takeFacts({ personId: alice, e164, companies: [DEMO.companies.acme], version: version + 2 });
    expect(JSON.parse((await object.indexValues())[`rcv:${e164}`]!)).toMatchObject({ c: [DEMO.companies.acme] });
  });

  it("a command that changes a person's facts raises their version (a secure number assigned)", async () => {
    const response = await as("alice").send("POST", "/companies/1/employees", employeeBody(fresh("versioned")));
    const { id } = await answer(response, 200, createEmployee);
    expect(await countRows("SELECT facts_version AS n FROM people WHERE id = ?", id)).toBe(0);
    const token = `pk_test_versioned_${crypto.randomUUID().replaceAll("-", "")}`;
    await insertToken(token, { personId: id });
    expect((await call("/apps/buzz/heartbeat", { token })).status).toBe(200);
    expect(await countRows("SELECT facts_version AS n FROM people WHERE id = ?", id)).toBe(1);
  });
});
