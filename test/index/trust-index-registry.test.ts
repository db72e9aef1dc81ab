import { describe, expect, it } from "vitest";
import { D1_KINDS, KEY_KINDS, kindOf, type KindName } from "../../src/domain/key-kinds";
import { D1_VALUES } from "../../src/services/trust-index/kinds";

/**
 * The registry of the trust index's key kinds (src/domain/key-kinds.ts) is the only spelling of a
 * prefix: the SQL of D1's triggers (drizzle/*.sql, which cannot import it) is checked against it
 * here, and so is the code under src/ (a prefix spelled by hand outside the registry fails).
 */

const migrations: Record<string, string> = import.meta.glob("../../drizzle/*.sql", {
  query: "?raw",
  import: "default",
  eager: true,
});
const sources: Record<string, string> = import.meta.glob(
  ["../../src/**/*.ts", "!../../src/worker-configuration.d.ts"],
  {
    query: "?raw",
    import: "default",
    eager: true,
  },
);

/** Every prefix a migration builds a key with (`'num:' || …`). */
const builtIn = (text: string) => [...text.matchAll(/'([a-z]+:)'\s*\|\|/gi)].map((m) => m[1]!);
/** Every prefix a migration matches keys by (`LIKE 'prs:%'`). */
const matchedIn = (text: string) => [...text.matchAll(/LIKE\s+'([a-z]+:)%'/gi)].map((m) => m[1]!);

describe("the trust index's key kinds", () => {
  it("every prefix D1's migrations build is a kind D1 writes or tells (never an object's or the rebuild's)", () => {
    const spelled = Object.entries(migrations).flatMap(([path, text]) =>
      builtIn(text).map((prefix) => ({ path, prefix, kind: kindOf(`${prefix}x`) })),
    );
    expect(spelled.length).toBeGreaterThan(0);
    for (const { path, prefix, kind } of spelled) {
      expect(kind, `${path}: ${prefix}`).not.toBeNull();
      expect(["d1", "tell"], `${path}: ${prefix} is written by ${KEY_KINDS[kind!].writer}`).toContain(
        KEY_KINDS[kind!].writer,
      );
    }
    // The triggers of drizzle/0026 and 0030 keep these kinds current whoever writes D1.
    const triggered = new Set(spelled.map(({ kind }) => kind));
    for (const name of ["prs", "co", "eml", "lnk"] as KindName[]) expect(triggered).toContain(name);
  });

  it("every prefix D1's migrations match keys by is a kind of the registry", () => {
    const matched = Object.entries(migrations).flatMap(([path, text]) =>
      matchedIn(text).map((prefix) => `${path}: ${prefix} ${kindOf(`${prefix}x`) === null ? "unknown" : "known"}`),
    );
    expect(matched.length).toBeGreaterThan(0);
    for (const line of matched) expect(line).toMatch(/ known$/);
  });

  it("every kind D1 writes has its computation, and the prefixes are distinct and end in a colon", () => {
    expect(Object.keys(D1_VALUES).sort()).toEqual([...D1_KINDS].sort());
    const prefixes = Object.values(KEY_KINDS).map((kind) => kind.prefix);
    expect(new Set(prefixes).size).toBe(prefixes.length);
    for (const prefix of prefixes) expect(prefix).toMatch(/^[a-z]+:$/);
  });

  it("each kind's parser reads back what its builder wrote", () => {
    expect(KEY_KINDS.num.parse(KEY_KINDS.num.key("+14155550100"))).toBe("+14155550100");
    expect(KEY_KINDS.rcvn.parse(KEY_KINDS.rcvn.key({ e164: "+12025550101", bucket: 7 }))).toEqual({
      e164: "+12025550101",
      bucket: 7,
    });
    expect(KEY_KINDS.rcvn.key({ e164: "+12025550101", bucket: 7 })).toBe("rcvn:+12025550101:07");
    expect(KEY_KINDS.co.parse(KEY_KINDS.co.key(12))).toBe(12);
    expect(KEY_KINDS.eml.parse(KEY_KINDS.eml.key("a:b@example.com"))).toBe("a:b@example.com");
    expect(kindOf("rcvn:+12025550101:07")).toBe("rcvn");
    expect(kindOf("rcv:+12025550101")).toBe("rcv");
    expect(kindOf("nope:1")).toBeNull();
  });

  it("no code under src/ spells a prefix by hand: keys are built and parsed through the registry", () => {
    const prefixes = Object.values(KEY_KINDS).map((kind) => kind.prefix);
    const spelled = new RegExp(`[\`"'](${prefixes.join("|")})`, "g");
    const offenders = Object.entries(sources)
      .filter(([path]) => !path.endsWith("/domain/key-kinds.ts"))
      .flatMap(([path, text]) =>
        text
          .split("\n")
          // Comments name keys to explain them; code builds them through the registry.
          .filter((line) => !/^\s*(\*|\/\/|\/\*)/.test(line) && spelled.test(line) && (spelled.lastIndex = 0) === 0)
          .map((line) => `${path}: ${line.trim()}`),
      );
    expect(offenders).toEqual([]);
  });
});
