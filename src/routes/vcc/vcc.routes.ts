import { createRoute, z } from "@hono/zod-openapi";
import { errorResponses, jsonContent } from "../../lib/openapi";

const VendorSchema = z
  .object({
    slug: z.string().openapi({ example: "admetrics" }),
    name: z.string().openapi({ example: "AdMetrics" }),
    logo: z.string().openapi({ description: "Logo URL; empty when none" }),
    category: z.string().openapi({ description: "The publisher's category for this vendor", example: "analytics" }),
    profile_url: z
      .string()
      .openapi({ description: "Public trust profile", example: "https://trust.example/vendors/admetrics" }),
    trust: z
      .enum(["trusted", "negative"])
      .nullable()
      .openapi({ description: "The visitor's setting; null when none or signed out" }),
  })
  .openapi("ContainerVendor");

export const ContainerSchema = z
  .object({
    is_authenticated: z.boolean(),
    company: z.object({
      slug: z.string().openapi({ description: "Publisher token (the container id)", example: "dailynews" }),
      name: z.string().openapi({ example: "Daily News" }),
      domain: z.string().openapi({ example: "dailynews.example" }),
      logo: z.string(),
    }),
    vendors: z.array(VendorSchema),
  })
  .openapi("Container");

export const loadContainer = createRoute({
  method: "get",
  path: "/apps/vcc/load_container/{container_id}",
  tags: ["Consent container"],
  summary: "A publisher's vendors with the visitor's trust setting for each",
  description:
    "No bearer token: the visitor is identified by the `session` cookie (a person's access token). " +
    "Without it, or with a bad one, `is_authenticated` is false and every `trust` is null. " +
    "CORS with credentials is granted only to the publisher's domain and its subdomains.",
  request: {
    params: z.object({
      container_id: z
        .string()
        .max(100)
        .openapi({
          param: { name: "container_id", in: "path" },
          description: "The publisher's token",
          example: "dailynews",
        }),
    }),
    cookies: z.object({
      session: z
        .string()
        .optional()
        .openapi({ param: { name: "session", in: "cookie" }, description: "A person's access token" }),
    }),
  },
  responses: {
    200: jsonContent(ContainerSchema, "The container"),
    ...errorResponses(400, 404, 429),
  },
});
