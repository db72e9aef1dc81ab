import { z } from "@hono/zod-openapi";
import { companyKinds } from "../../db/schema";
import { EmailAddress } from "../../lib/email";
import { pathId, int64Id } from "../../lib/ids";
import { atLeastOneOf } from "../../lib/openapi";
import { ContainerSchema } from "../vcc/vcc.routes";

/*
 * The platform operator's view of companies and containers (docs/decisions.md,
 * "Operating the platform"). Input is standardized here: names trimmed,
 * slugs and domains lowercase, URLs absolute http(s).
 */

const Name = z.string().trim().min(1).max(200).openapi({ example: "Initech" });

const Slug = z
  .string()
  .trim()
  .toLowerCase()
  .regex(/^[a-z0-9][a-z0-9-]{0,62}$/, {
    message: "must be 1–63 lowercase letters, digits or dashes, not starting with a dash",
  })
  .openapi({ description: "Unique across all companies; a publisher's slug is its container id", example: "initech" });

const HttpUrl = z
  .string()
  .trim()
  .max(2048)
  .pipe(z.url({ protocol: /^https?$/, error: "must be an absolute http(s) URL" }))
  .openapi({ type: "string", format: "uri" });

const Domain = z
  .string()
  .trim()
  .toLowerCase()
  .max(253)
  .regex(/^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)+$/, {
    message: "must be a host name such as `news.example`",
  })
  .openapi({ description: "Publishers: the domain whose pages may load the container", example: "news.example" });

/** Fields that only one kind of company has: a 400 names the field when another kind sends it. */
const KIND_OF_FIELD = { domain: "publisher", scanner: "site", profile_url: "vendor" } as const;

function onlyForItsKind(kind: string, body: Record<string, unknown>, ctx: z.RefinementCtx) {
  for (const [field, owner] of Object.entries(KIND_OF_FIELD)) {
    if (body[field] !== undefined && kind !== owner) {
      ctx.addIssue({
        code: "custom",
        path: [field],
        message: `is only for companies of kind \`${owner}\`, not \`${kind}\``,
      });
    }
  }
}

export const NewCompanySchema = z
  .object({
    kind: z.enum(companyKinds).openapi({ description: "employer (a tenant), site (people-search), publisher, vendor" }),
    name: Name,
    slug: Slug,
    url: HttpUrl.optional().openapi({ example: "https://initech.example" }),
    logo: HttpUrl.optional().openapi({ example: "https://initech.example/logo.png" }),
    domain: Domain.optional(),
    scanner: z.boolean().optional().openapi({ description: "Sites: whether the scanner covers it (default false)" }),
    profile_url: HttpUrl.optional().openapi({ description: "Vendors: public trust profile" }),
  })
  .superRefine((body, ctx) => onlyForItsKind(body.kind, body, ctx))
  .openapi("NewPlatformCompany", {
    description: "`domain` only for publishers, `scanner` only for sites, `profile_url` only for vendors",
    // One alternative per `kind` (a `discriminator` would need each as a named schema).
    oneOf: companyKinds.map((kind) => ({
      title: kind,
      required: ["kind"],
      properties: {
        kind: { const: kind },
        // A field of another kind: no value is allowed (`not: {}`).
        ...Object.fromEntries(
          Object.entries(KIND_OF_FIELD)
            .filter(([, owner]) => owner !== kind)
            .map(([field]) => [field, { not: {} }]),
        ),
      },
    })),
  });

const COMPANY_CHANGES = ["name", "url", "logo", "domain", "scanner", "status"] as const;

export const CompanyChangesSchema = z
  .object({
    name: Name.optional(),
    url: HttpUrl.optional(),
    logo: HttpUrl.nullable().optional().openapi({ description: "null removes the logo" }),
    domain: Domain.optional(),
    scanner: z.boolean().optional(),
    status: z
      .enum(["enabled", "disabled"])
      .optional()
      .openapi({ description: "A disabled publisher's container answers 404" }),
  })
  .refine((body) => Object.values(body).some((value) => value !== undefined), {
    message: `give at least one of ${COMPANY_CHANGES.map((field) => `\`${field}\``).join(", ")}`,
  })
  .openapi("PlatformCompanyChanges", { description: "At least one field", ...atLeastOneOf(COMPANY_CHANGES) });

export const PlatformCompanySchema = z
  .object({
    id: int64Id().openapi({ example: 11 }),
    kind: z.enum(companyKinds),
    name: z.string().openapi({ example: "Initech" }),
    slug: z.string().openapi({ example: "initech" }),
    status: z.enum(["enabled", "disabled"]),
    url: z.string().openapi({ description: "Empty when none", example: "https://initech.example" }),
    logo: z.string().openapi({ description: "Logo URL; empty when none" }),
    domain: z.string().nullable().openapi({ description: "Publishers' domain; null for other kinds" }),
    scanner: z.boolean().openapi({ description: "Sites: whether the scanner covers it" }),
    profile_url: z.string().nullable().openapi({ description: "Vendors' trust profile; null for other kinds" }),
  })
  .openapi("PlatformCompany");

export const NewMemberSchema = z
  .object({
    first_name: z.string().trim().min(1).max(100).openapi({ example: "Dana" }),
    last_name: z.string().trim().min(1).max(100).openapi({ example: "Admin" }),
    email: EmailAddress,
    roles: z
      .array(z.string().trim().min(1).max(100))
      .min(1)
      .max(20)
      .openapi({ description: "Role names of the company (case-insensitive)", example: ["Admin"] }),
  })
  .openapi("NewPlatformMember");

export const MemberCreatedSchema = z
  .object({ person_id: int64Id().openapi({ example: 4 }) })
  .openapi("PlatformMemberCreated");

export const ContainerConfigSchema = z
  .object({
    enabled: z.boolean(),
    vendors: z
      .array(
        z.object({
          slug: z.string().trim().toLowerCase().min(1).max(63).openapi({ example: "admetrics" }),
          category: z.string().trim().min(1).max(50).openapi({ example: "analytics" }),
        }),
      )
      .max(100)
      .optional()
      .openapi({
        description:
          "The container's vendors in display order; each must be a company of kind `vendor`. Omitted: the " +
          "container keeps the vendors it lists (a new one lists none), so `enabled` alone can change",
      }),
  })
  .superRefine((body, ctx) => {
    const seen = new Set<string>();
    body.vendors?.forEach((vendor, i) => {
      if (seen.has(vendor.slug))
        ctx.addIssue({ code: "custom", path: ["vendors", i, "slug"], message: "is listed twice" });
      seen.add(vendor.slug);
    });
  })
  .openapi("ContainerConfig");

export const PlatformContainerSchema = ContainerSchema.extend({
  enabled: z.boolean().openapi({ description: "false: visitors get 404 (so does a disabled publisher)" }),
}).openapi("PlatformContainer");

export const CompanyIdParams = z.object({ id: pathId("id", "Company id") });

export const PublisherParams = z.object({
  publisher_slug: z
    .string()
    .max(100)
    .openapi({
      param: { name: "publisher_slug", in: "path" },
      description: "The publisher's slug",
      example: "dailynews",
    }),
});
