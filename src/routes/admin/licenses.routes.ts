import { createRoute, z } from "@hono/zod-openapi";
import { bearerSecurity, errorResponses, jsonContent } from "../../lib/openapi";
import { requireAuth } from "../../middleware/auth";
import { LicenseSchema } from "../licenses/licenses.schemas";

/*
 * The operator's license catalog (docs/decisions.md, "Licenses"): what
 * companies can buy seats of with POST /licenses.
 */

const tags = ["Platform admin"];
const requireAdmin = requireAuth({ scope: "platform:admin" });
const NEEDS = "Needs a service token with scope `platform:admin` (the operator; `npm run admin`). ";

/** Lowercased, so `/internal/licenses/Protect` is the entry `protect`; anything else names no route (404). */
const LicenseIdParams = z.object({
  id: z
    .string()
    .toLowerCase()
    .regex(/^[a-z0-9][a-z0-9_-]{0,62}$/, {
      message: "must be 1–63 lowercase letters, digits, `-` or `_`, not starting with either",
    })
    .openapi({
      param: { name: "id", in: "path", required: true },
      description: "The license id, as `GET /licenses` shows it and purchases name it",
      example: "protect",
    }),
});

const SiteSlug = z
  .string()
  .trim()
  .toLowerCase()
  .min(1)
  .max(63)
  .openapi({ description: "A people-search site's slug", example: "peoplefinder" });

export const CatalogEntrySchema = z
  .object({
    name: z
      .string()
      .trim()
      .min(1)
      .max(100)
      .openapi({ description: "Unique: employees and purchases may name a license by it", example: "Protect" }),
    price: z
      .number()
      .int()
      .min(0)
      .max(100_000_000)
      .openapi({ description: "Per seat, in minor units (cents): 9900 is 99.00", example: 9900 }),
    currency: z
      .string()
      .trim()
      .toUpperCase()
      .regex(/^[A-Z]{3}$/, { message: "must be an ISO 4217 code such as `USD`" })
      .optional()
      .openapi({ description: "ISO 4217; `USD` when omitted (also when replacing)", example: "USD" }),
    full_scan: z.boolean(),
    full_delete: z.boolean(),
    sites: z
      .array(SiteSlug)
      .max(100)
      .openapi({
        description: "The people-search sites the license covers (companies of kind `site`)",
        example: ["peoplefinder"],
      }),
  })
  .superRefine((body, ctx) => {
    const seen = new Set<string>();
    body.sites.forEach((slug, i) => {
      if (seen.has(slug)) ctx.addIssue({ code: "custom", path: ["sites", i], message: "is listed twice" });
      seen.add(slug);
    });
  })
  .openapi("LicenseCatalogEntry");

export const putLicense = createRoute({
  operationId: "adminPutLicense",
  method: "put",
  path: "/internal/licenses/{id}",
  tags,
  summary: "Create or replace a license of the catalog",
  description:
    NEEDS +
    "Every field is replaced (an omitted `currency` is `USD`). Seats companies bought and the seats their employees " +
    "hold are kept; their new name, price and sites apply at once. A site slug that is not a people-search site is " +
    "400; a name another license already has (or another license's id) is 409. Answers the License as " +
    "`GET /licenses` shows it to a company that bought no seats of it.",
  security: bearerSecurity,
  middleware: [requireAdmin] as const,
  request: {
    params: LicenseIdParams,
    body: { content: { "application/json": { schema: CatalogEntrySchema } }, required: true },
  },
  responses: {
    200: jsonContent(LicenseSchema, "The license as the catalog lists it, with zero seats"),
    ...errorResponses(400, 401, 403, 404, 409, 413, 429),
  },
});

export const retireLicense = createRoute({
  operationId: "adminRetireLicense",
  method: "delete",
  path: "/internal/licenses/{id}",
  tags,
  summary: "Retire a license from the catalog",
  description:
    NEEDS +
    "Removes the license while no company holds seats of it; otherwise 409 naming the companies that do " +
    "(seats are never sold back, so such a license can only be changed with PUT).",
  security: bearerSecurity,
  middleware: [requireAdmin] as const,
  request: { params: LicenseIdParams },
  responses: {
    204: { description: "Retired" },
    ...errorResponses(401, 403, 404, 409, 429),
  },
});
