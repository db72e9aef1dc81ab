// `npm run numbers -- <command>`: load secure numbers into the pool that the
// heartbeat assigns from (docs/decisions.md). Local D1 by default, `--remote` for production.
import { parsePhoneNumberWithError } from "libphonenumber-js/max";
import { d1, fail, parseArgs, sqlString } from "./lib/cli.mjs";

const USAGE = `Usage:
  npm run numbers -- add <E.164 number> [<E.164 number> ...] [--remote]
  npm run numbers -- list [--remote]

Numbers are international, e.g. +12025550111. Adding a number already in the pool changes nothing.`;

const { flags, positionals } = parseArgs(process.argv.slice(2), { switches: ["remote", "help"] });
const remote = flags.remote === "true";
const [command, ...numbers] = positionals;

if (command === "add") {
  if (!numbers.length) fail(`add needs at least one number.\n\n${USAGE}`);
  const parsed = numbers.map((raw) => {
    try {
      const phone = parsePhoneNumberWithError(raw);
      if (!phone.isValid()) throw new Error("not a valid number");
      return phone;
    } catch (err) {
      return fail(`"${raw}" is not a usable international number (${err instanceof Error ? err.message : err}).`);
    }
  });
  const now = Date.now();
  const values = parsed
    .map((p) => `(${sqlString(p.number)}, ${sqlString(p.countryCallingCode)}, ${sqlString(p.nationalNumber)}, ${now})`)
    .join(", ");
  const [added] = d1(
    `INSERT INTO secure_numbers (e164, country_code, number, created_at) VALUES ${values} ON CONFLICT (e164) DO NOTHING RETURNING e164`,
    { remote },
  );
  console.error(`Added ${added.length} of ${parsed.length} number(s) to the ${remote ? "remote" : "local"} pool.`);
  for (const row of added) console.log(row.e164);
} else if (command === "list") {
  const [rows] = d1("SELECT e164, person_id, assigned_at FROM secure_numbers ORDER BY e164", { remote });
  console.table(
    rows.map((row) => ({
      number: row.e164,
      holder: row.person_id ?? "",
      assigned: row.assigned_at ? new Date(row.assigned_at).toISOString() : "",
    })),
  );
} else {
  if (command) fail(`unknown command "${command}".\n\n${USAGE}`);
  console.error(USAGE);
  process.exit(flags.help ? 0 : 1);
}
