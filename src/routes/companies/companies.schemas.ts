import { z } from "@hono/zod-openapi";
import { pathId, int64Id } from "../../lib/ids";

export const CompanySchema = z
  .object({
    id: int64Id().openapi({ example: 1 }),
    name: z.string().openapi({ example: "Acme Corp" }),
    status: z.enum(["enabled", "disabled"]).openapi({ example: "enabled" }),
    url: z.string().openapi({ example: "https://acme.example" }),
    logo: z.string().openapi({ description: "Logo URL; empty when none", example: "" }),
    scanner: z.boolean().openapi({ description: "Whether the scanner covers it (people-search sites)" }),
  })
  .openapi("Company");

/** The short company reference `{id, name, slug, logo, url}` (coworkers, exposure history, sites in exposures). */
export const CompanyRefSchema = z
  .object({
    id: int64Id(),
    name: z.string().openapi({ example: "Acme Corp" }),
    slug: z.string().openapi({ example: "acme" }),
    logo: z.string().openapi({ description: "Logo URL; empty when none" }),
    url: z.string().openapi({ example: "https://acme.example" }),
  })
  .openapi("CompanyRef");

export const RoleSchema = z
  .object({
    name: z.string().openapi({ example: "HR" }),
    permissions: z.array(z.string()).openapi({ example: ["read employees", "write employees"] }),
  })
  .openapi("Role");

export const CompanyParams = z.object({ company_id: pathId("company_id", "Company id") });

export const SiteParams = CompanyParams.extend({ id: pathId("id", "People-search site id") });
