// `npm run numbers -- <command>`: load secure numbers into the pool that the
// heartbeat assigns from (docs/decisions.md). Local D1 by default, `--remote` for production.
import { parsePhoneNumberWithError } from "libphonenumber-js/max";
import { d1, fail, noMorePositionals, parseArgs, sqlString } from "./lib/cli.mjs";

const USAGE = `Usage:
  npm run numbers -- add <E.164 number> [<E.164 number> ...] [--remote]
  npm run numbers -- list [--remote]

Numbers are international, e.g. +12025550111. Adding a number already in the pool changes nothing.
A number that is a company's verified phone or a phone a person proved is refused (it is someone's
already; src/services/company-phones.ts applies the same rule the other way): the others are added,
and the command exits 1.`;

const { flags, positionals } = parseArgs(process.argv.slice(2), { switches: ["remote", "help"] });
const remote = flags.remote === true;
const [command, ...numbers] = positionals;

/** Numbers per D1 command: each number's SQL appears three times, about 150 bytes, well inside 100 KB. */
const NUMBERS_PER_COMMAND = 200;

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
  // A D1 statement holds at most 100 KB of SQL: the numbers go in chunks, each one command.
  const owners = [];
  const added = [];
  for (let i = 0; i < parsed.length; i += NUMBERS_PER_COMMAND) {
    const chunk = parsed.slice(i, i + NUMBERS_PER_COMMAND);
    const values = chunk
      .map(
        (p) => `(${sqlString(p.number)}, ${sqlString(p.countryCallingCode)}, ${sqlString(p.nationalNumber)}, ${now})`,
      )
      .join(", ");
    // Whose a number is, and the insert of the others, in one command; the insert checks again itself.
    const given = `SELECT column1 FROM (VALUES ${values})`;
    const [chunkOwners, chunkAdded] = d1(
      `SELECT e164, 'the verified phone of company ' || company_id AS owner FROM company_phones
         WHERE status = 'verified' AND e164 IN (${given})
       UNION ALL SELECT e164, 'a phone person ' || person_id || ' proved' FROM person_phones
         WHERE confirmed = 1 AND e164 IN (${given});
       INSERT INTO secure_numbers (e164, country_code, number, created_at)
         SELECT column1, column2, column3, column4 FROM (VALUES ${values}) AS v
         WHERE NOT EXISTS (SELECT 1 FROM company_phones c WHERE c.e164 = v.column1 AND c.status = 'verified')
           AND NOT EXISTS (SELECT 1 FROM person_phones p WHERE p.e164 = v.column1 AND p.confirmed = 1)
         ON CONFLICT (e164) DO NOTHING RETURNING e164`,
      { remote },
    );
    owners.push(...chunkOwners);
    added.push(...chunkAdded);
    if (parsed.length > NUMBERS_PER_COMMAND)
      console.error(`  ${Math.min(i + NUMBERS_PER_COMMAND, parsed.length)} of ${parsed.length} number(s) done`);
  }
  console.error(`Added ${added.length} of ${parsed.length} number(s) to the ${remote ? "remote" : "local"} pool.`);
  for (const row of added) console.log(row.e164);
  const refused = [...new Set(owners.map((row) => row.e164))];
  for (const e164 of refused) {
    const whose = owners.filter((row) => row.e164 === e164).map((row) => row.owner);
    console.error(`✖ refused ${e164}: it is ${whose.join(" and ")}; a secure number must be no one's own number.`);
  }
  if (refused.length) process.exit(1);
} else if (command === "list") {
  noMorePositionals(command, numbers, 0, USAGE);
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
