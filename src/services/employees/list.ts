import { and, asc, count, eq, gte, inArray, lt } from "drizzle-orm";
import type { Db } from "../../db/client";
import { memberships, personEmails } from "../../db/schema";
import { pageWindow, type Page } from "../../lib/pagination";
import { peopleReads, visibleEmail } from "../people";

/**
 * One page of the company's employees as the response body (JSON text,
 * written straight from the rows: services/people.ts), and how many match,
 * in one D1 round trip.
 * `search` keeps those with an email starting with it [seed 4.3 rule 1]. The
 * prefix is a range on the lowercased, uniquely indexed email
 * (`email >= p AND email < p⁺`), so SQLite seeks the index instead of
 * scanning every address as `LIKE 'p%'` would.
 */
export async function listEmployees(db: Db, companyId: number, search: string | null, page: Page) {
  const { limit, offset } = pageWindow(page);
  const upper = search ? prefixUpperBound(search) : null;
  // With a search, the email range drives: SQLite reads the matching addresses
  // from the unique index, then probes (company_id, person_id) for each.
  const where = and(
    eq(memberships.companyId, companyId),
    search
      ? inArray(
          memberships.personId,
          db
            .select({ personId: personEmails.personId })
            .from(personEmails)
            .where(
              and(
                gte(personEmails.email, search),
                upper === null ? undefined : lt(personEmails.email, upper),
                visibleEmail(companyId),
              ),
            ),
        )
      : undefined,
  );
  const ids = db
    .select({ personId: memberships.personId })
    .from(memberships)
    .where(where)
    .orderBy(asc(memberships.personId))
    .limit(limit)
    .offset(offset);
  const reads = peopleReads(db, companyId, ids);
  const [[total], ...results] = await db.batch([
    db.select({ n: count() }).from(memberships).where(where),
    ...reads.statements,
  ]);
  return { json: reads.render(results), total: total?.n ?? 0 };
}

/**
 * The smallest string greater than every string that starts with `prefix`
 * (SQLite compares UTF-8 bytes, i.e. code points), or null when there is
 * none: trailing U+10FFFF cannot be bumped, so they go and the code point
 * before them is bumped instead, skipping the surrogates.
 */
function prefixUpperBound(prefix: string): string | null {
  const codes = Array.from(prefix, (char) => char.codePointAt(0)!);
  while (codes.length > 0 && codes[codes.length - 1] === 0x10ffff) codes.pop();
  const last = codes.pop();
  if (last === undefined) return null;
  const next = last + 1 === 0xd800 ? 0xe000 : last + 1;
  return String.fromCodePoint(...codes, next);
}
