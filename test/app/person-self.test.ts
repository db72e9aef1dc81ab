import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { idOfName } from "../../src/objects/person/self";
import { personObject } from "../helpers";

/*
 * A person's object knows its own person (src/objects/person/self.ts): from
 * its name `person:<id>` (`ctx.id.name`), kept in its storage for an alarm
 * that wakes a fresh instance without the name.
 */
describe("the Person object knows its person", () => {
  it("reads the id from its name, and nothing from any other name", () => {
    expect(idOfName("person:42")).toBe(42);
    expect(idOfName(undefined)).toBeNull();
    expect(idOfName("person:")).toBeNull();
    expect(idOfName("company:42")).toBeNull();
  });

  it("has its name inside the object, and keeps the id in its storage once it started", async () => {
    const personId = 980_011;
    const object = personObject(personId);
    await object.lastActivityId();
    const seen = await runInDurableObject(object, (_, state) => ({
      name: state.id.name,
      kept: state.storage.kv.get<number>("person:id"),
    }));
    expect(seen).toEqual({ name: `person:${personId}`, kept: personId });
  });

  it("keeps the id through an erasure (its storage is wiped, the id written again with the mark)", async () => {
    const personId = 980_012;
    const object = personObject(personId);
    await object.erase();
    expect(await runInDurableObject(object, (_, state) => state.storage.kv.get<number>("person:id"))).toBe(personId);
  });
});
