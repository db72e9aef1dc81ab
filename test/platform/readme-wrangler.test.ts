import { describe, expect, it } from "vitest";
import readme from "../../README.md?raw";
import wranglerToml from "../../wrangler.toml?raw";

/**
 * README.md's deploy steps and its queue and cron tables against wrangler.toml,
 * so that a queue or cron added to one cannot be missing from the other.
 * wrangler.toml is read with two patterns (no TOML parser inside workerd): every
 * `queue = "…"` / `dead_letter_queue = "…"` and every `crons = [ … ]`, in all environments.
 */
const sorted = (values: Iterable<string>) => [...new Set(values)].sort();

const tomlQueues = sorted(
  [...wranglerToml.matchAll(/^\s*(?:queue|dead_letter_queue)\s*=\s*"([^"]+)"/gm)].map((match) => match[1]!),
);
const tomlCronLists = [...wranglerToml.matchAll(/^\s*crons\s*=\s*\[([^\]]*)\]/gm)].map((match) =>
  sorted([...match[1]!.matchAll(/"([^"]+)"/g)].map((cron) => cron[1]!)),
);
const tomlCrons = sorted(tomlCronLists.flat());

/** The text from a heading to the next heading of the same or a higher level. */
function section(heading: string): string {
  const start = readme.indexOf(`\n${heading}\n`);
  expect(start, `README has no "${heading}"`).toBeGreaterThanOrEqual(0);
  const level = heading.match(/^#+/)![0].length;
  const rest = readme.slice(start + heading.length + 2);
  const end = rest.search(new RegExp(`^#{1,${level}} `, "m"));
  return end === -1 ? rest : rest.slice(0, end);
}

/** The backquoted names in the first cell of a table's rows (`| \`a\`, \`b\` | … |`), after its header row. */
function firstColumn(text: string, header: string): string[] {
  const lines = text.split("\n");
  const at = lines.findIndex((line) => line.startsWith(`| ${header} |`));
  expect(at, `no table with the header "${header}"`).toBeGreaterThanOrEqual(0);
  const rows = [];
  for (const line of lines.slice(at + 2)) {
    if (!line.startsWith("|")) break;
    rows.push(line.split("|")[1]!);
  }
  return rows.flatMap((cell) => [...cell.matchAll(/`([^`]+)`/g)].map((match) => match[1]!));
}

describe("README and wrangler.toml", () => {
  it("wrangler.toml is read as expected", () => {
    expect(tomlQueues).toContain("webhook-deliveries");
    expect(tomlQueues.length).toBeGreaterThanOrEqual(6);
    expect(tomlCronLists.length).toBe(2); // the default environment and production
    expect(tomlCrons).toContain("* * * * *");
  });

  it("every environment declares the same crons", () => {
    for (const list of tomlCronLists) expect(list).toEqual(tomlCrons);
  });

  it("the deploy steps create every queue wrangler.toml binds, and no other", () => {
    const deploy = section("## Deploy");
    const created = deploy
      .split("\n")
      .filter((line) => line.includes("wrangler queues create"))
      .flatMap((line) => {
        const loop = /\bfor\s+\w+\s+in\s+([^;]+);/.exec(line);
        if (loop) return loop[1]!.trim().split(/\s+/);
        return [/wrangler queues create\s+(\S+)/.exec(line)![1]!];
      });
    expect(sorted(created)).toEqual(tomlQueues);
  });

  it("the queue table names every queue wrangler.toml binds, and no other", () => {
    expect(sorted(firstColumn(section("## Deploy"), "queue"))).toEqual(tomlQueues);
  });

  it("the cron table names every cron wrangler.toml declares, and no other", () => {
    expect(sorted(firstColumn(section("### Scheduled work"), "cron"))).toEqual(tomlCrons);
  });

  it("says how to fire each cron locally", () => {
    for (const cron of tomlCrons) expect(readme).toContain(`?cron=${cron.replaceAll(" ", "+")}`);
  });
});
