import { z } from "@hono/zod-openapi";
import type { Context } from "hono";

/**
 * A whole number in a query string: decimal digits only, from `min` to `max`, else a 400 naming the
 * parameter. Not `z.coerce`, which reads an empty `?after=` as 0, `1e3` as 1000, `0x10` as 16 and
 * ` 5` as 5: a client whose variable was empty or mangled gets a 400, not another page. With
 * `fallback`, the value when the parameter is absent; without, it is optional.
 */
export function queryInteger(
  name: string,
  bounds: { min: number; max: number; fallback: number },
  description: string,
  example: number,
): z.ZodDefault<ReturnType<typeof digitsFrom>>;
export function queryInteger(
  name: string,
  bounds: { min: number; max: number },
  description: string,
  example: number,
): z.ZodOptional<ReturnType<typeof digitsFrom>>;
export function queryInteger(
  name: string,
  { min, max, fallback }: { min: number; max: number; fallback?: number },
  description: string,
  example: number,
) {
  const digits = digitsFrom(min, max);
  const schema = fallback === undefined ? digits.optional() : digits.default(fallback);
  return schema.openapi({
    param: { name, in: "query" },
    type: "integer",
    minimum: min,
    maximum: max,
    ...(fallback === undefined ? {} : { default: fallback }),
    description,
    example,
  });
}

const digitsFrom = (min: number, max: number) =>
  z
    .string()
    .regex(/^[0-9]{1,16}$/, { message: `must be a whole number from ${min}` })
    .transform(Number)
    .pipe(z.number().int().min(min).max(max));

/** An id a query string resumes after (`?after=`, keyset paging): 0 for "from the start". */
export const queryAfterId = (description: string, example: number) =>
  queryInteger("after", { min: 0, max: Number.MAX_SAFE_INTEGER }, description, example);

/**
 * The one paging scheme (docs/decisions.md): `page` from 1, `per_page` with a
 * per-endpoint default and maximum; out-of-range values are a 400, never
 * clamped. Answers carry `X-Total-Count` and an RFC 8288 `Link` header.
 */
export function pageQuery(defaultPerPage: number, maxPerPage: number) {
  return z.object({
    page: queryInteger("page", { min: 1, max: Number.MAX_SAFE_INTEGER, fallback: 1 }, "Page number, from 1", 1),
    per_page: queryInteger(
      "per_page",
      { min: 1, max: maxPerPage, fallback: defaultPerPage },
      `Results per page (default ${defaultPerPage}, at most ${maxPerPage})`,
      defaultPerPage,
    ),
  });
}

export type Page = { page: number; per_page: number };

/** SQL `LIMIT` / `OFFSET` of a page. */
export const pageWindow = ({ page, per_page }: Page) => ({ limit: per_page, offset: (page - 1) * per_page });

/**
 * Sets `X-Total-Count` and `Link` (`first`, `prev`, `next`, `last`) for a page of `total` items.
 * With `keyset` (a request that used `after`), `next` continues after the page's last id
 * (`keyset.last`), none after an empty page; `first` and `last` are the numbered pages.
 */
export function setPageHeaders(c: Context, { page, per_page }: Page, total: number, keyset?: { last: number | null }) {
  c.header("X-Total-Count", String(total));
  const lastPage = Math.max(1, Math.ceil(total / per_page));
  // One URL for the page links: each sets the same two parameters, so each reads as from a fresh copy.
  // Without `after`: `first` and `last` are numbered pages of the whole list (a page other than 1
  // with `after` is a 400, and `after` with page 1 is this page again, not the first).
  const url = new URL(c.req.url);
  url.searchParams.delete("after");
  const link = (n: number, rel: string) => {
    url.searchParams.set("page", String(n));
    url.searchParams.set("per_page", String(per_page));
    return `<${url.toString()}>; rel="${rel}"`;
  };
  const links = [link(1, "first")];
  if (page > 1) links.push(link(Math.min(page - 1, lastPage), "prev"));
  if (keyset) {
    if (keyset.last !== null) {
      // A fresh copy: `after` goes before the page parameters the links added.
      const after = new URL(c.req.url);
      after.searchParams.set("after", String(keyset.last));
      after.searchParams.set("page", "1");
      after.searchParams.set("per_page", String(per_page));
      links.push(`<${after.toString()}>; rel="next"`);
    }
  } else if (page < lastPage) links.push(link(page + 1, "next"));
  links.push(link(lastPage, "last"));
  c.header("Link", links.join(", "));
}

/** Documents the paging headers on a list response. */
export const pageHeaders = z.object({
  "X-Total-Count": z.string().openapi({ description: "Number of items across all pages", example: "42" }),
  Link: z.string().openapi({ description: 'RFC 8288 links: rel="first", "prev", "next", "last"' }),
});

/**
 * The cursor variant of the paging scheme (docs/decisions.md), for lists that
 * grow with other people's choices and are read newest first: `cursor` (from
 * the previous answer's `Link: <…>; rel="next"`) and `limit` with a default
 * and a maximum; an out-of-range limit or a malformed cursor is a 400.
 */
export function cursorQuery(defaultLimit: number, maxLimit: number, cursorShape: RegExp) {
  return z.object({
    cursor: z
      .string()
      .regex(cursorShape, 'must be the cursor of a previous answer\'s `Link` (rel="next")')
      .optional()
      .openapi({
        param: { name: "cursor", in: "query" },
        description: 'Where the page starts: from the previous page\'s `Link` header (rel="next"); omit for the first',
      }),
    limit: queryInteger(
      "limit",
      { min: 1, max: maxLimit, fallback: defaultLimit },
      `Results per page (default ${defaultLimit}, at most ${maxLimit})`,
      defaultLimit,
    ),
  });
}

/** Sets `Link: <…?cursor=…&limit=…>; rel="next"` when there is a next page (none on the last). */
export function setNextCursor(c: Context, next: string | null, limit: number) {
  if (next === null) return;
  const url = new URL(c.req.url);
  url.searchParams.set("cursor", next);
  url.searchParams.set("limit", String(limit));
  c.header("Link", `<${url.toString()}>; rel="next"`);
}

/** Documents the cursor paging header on a list response. */
export const cursorHeaders = z.object({
  Link: z
    .string()
    .optional()
    .openapi({ description: 'RFC 8288 link to the next page: rel="next"; absent on the last page' }),
});
