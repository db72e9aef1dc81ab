import { createRoute, z } from "@hono/zod-openapi";
import { requirePerson } from "../../middleware/auth";
import { bearerSecurity, errorResponses, jsonContent } from "../../lib/openapi";
import { containerVisitor } from "./vcc.middleware";
import { TrustSettingInputSchema, TrustSettingSchema } from "../contacts/company-trust.schemas";

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

const tags = ["Consent container"];

const ContainerParams = z.object({
  container_id: z
    .string()
    .max(100)
    .openapi({
      param: { name: "container_id", in: "path" },
      description: "The publisher's token",
      example: "dailynews",
    }),
});

const SessionCookie = z.object({
  session: z
    .string()
    .optional()
    .openapi({
      param: { name: "session", in: "cookie" },
      description: "A person's access token, or the container-scoped token `POST /apps/vcc/session` set",
    }),
});

export const loadContainer = createRoute({
  operationId: "loadContainer",
  method: "get",
  path: "/apps/vcc/load_container/{container_id}",
  tags,
  summary: "A publisher's vendors with the visitor's trust setting for each",
  description:
    "No bearer token: the visitor is identified by the `session` cookie (a person's access token). " +
    "Without it, or with a bad one, `is_authenticated` is false and every `trust` is null. " +
    "CORS with credentials is granted only to the publisher's domain and its subdomains, over https " +
    "(also http in development).",
  security: [],
  request: { params: ContainerParams, cookies: SessionCookie },
  responses: {
    200: jsonContent(ContainerSchema, "The container"),
    ...errorResponses(400, 404, 429),
  },
});

const VendorTrustParams = ContainerParams.extend({
  vendor_slug: z
    .string()
    .max(100)
    .openapi({
      param: { name: "vendor_slug", in: "path" },
      description: "A vendor of the container",
      example: "admetrics",
    }),
});

/** The `session` cookie as an OpenAPI security scheme (registered in app.ts). */
const cookieSecurity = [{ sessionCookie: [] }];

export const setVendorTrust = createRoute({
  operationId: "setVendorTrust",
  method: "put",
  path: "/apps/vcc/trust/{container_id}/{vendor_slug}",
  tags,
  summary: "Set the visitor's trust in one of the container's vendors",
  description:
    "The visitor is the person of the `session` cookie (from the publisher's page: credentialed CORS, " +
    "preflight granted to the publisher's domain and subdomains only; or from the frame) or of a person " +
    "bearer token. The setting is the person's trust in that company (`PUT /contacts/companies/{id}/trust`).",
  security: [...bearerSecurity, ...cookieSecurity],
  middleware: [containerVisitor] as const,
  request: {
    params: VendorTrustParams,
    cookies: SessionCookie,
    body: { content: { "application/json": { schema: TrustSettingInputSchema } }, required: true },
  },
  responses: {
    200: jsonContent(
      z
        .object({ slug: z.string().openapi({ example: "admetrics" }), trust: TrustSettingSchema })
        .openapi("VendorTrust"),
      "The setting saved",
    ),
    ...errorResponses(400, 401, 403, 404, 413, 429),
  },
});

export const vendorTrustPreflight = createRoute({
  operationId: "vendorTrustPreflight",
  method: "options",
  path: "/apps/vcc/trust/{container_id}/{vendor_slug}",
  tags,
  summary: "CORS preflight for setting vendor trust from the publisher's page",
  description:
    "Grants `PUT` with credentials and `Content-Type` to the publisher's domain and subdomains (https; " +
    "also http in development); any other origin gets the answer without a grant.",
  security: [],
  request: { params: VendorTrustParams },
  responses: {
    204: { description: "Preflight answered; `Access-Control-Allow-*` only for the publisher's origins" },
    ...errorResponses(404, 429),
  },
});

export const createSession = createRoute({
  operationId: "createContainerSession",
  method: "post",
  path: "/apps/vcc/session",
  tags,
  summary: "Sign the browser in to the consent container",
  description:
    "With a person's bearer token: sets the `session` cookie (`Path=/apps/vcc; HttpOnly; Secure; " +
    "SameSite=None`) to a new container-scoped token of that person. That token authenticates only " +
    "`/apps/vcc/*`; anywhere else it is 401. It expires after 30 days. A container-scoped token cannot " +
    "create another session (403).",
  security: bearerSecurity,
  middleware: [requirePerson] as const,
  responses: {
    204: { description: "Signed in; see `Set-Cookie`", headers: { "Set-Cookie": { schema: { type: "string" } } } },
    ...errorResponses(401, 403, 429),
  },
});

export const deleteSession = createRoute({
  operationId: "deleteContainerSession",
  method: "delete",
  path: "/apps/vcc/session",
  tags,
  summary: "Sign the browser out of the consent container",
  description:
    "Revokes the container-scoped token of the `session` cookie and clears the cookie. Answers 204 also " +
    "without a session. A full person token in the cookie is not revoked (only the cookie is cleared).",
  security: [],
  request: { cookies: SessionCookie },
  responses: {
    204: { description: "Signed out; see `Set-Cookie`", headers: { "Set-Cookie": { schema: { type: "string" } } } },
    ...errorResponses(429),
  },
});

const html = (description: string) => ({ content: { "text/html": { schema: z.string() } }, description });

export const frame = createRoute({
  operationId: "containerFrame",
  method: "get",
  path: "/apps/vcc/frame/{container_id}",
  tags,
  summary: "The consent container as a page for the publisher to embed in an iframe",
  description:
    "A small HTML page (no framework) served with `Content-Security-Policy: frame-ancestors` limited to " +
    "the publisher's domain and subdomains. It loads the container for the visitor; when the browser " +
    "withholds the `session` cookie it offers a button that asks for storage access " +
    '(`document.requestStorageAccess()`). It posts `{type: "vcc:container", container}` to the parent ' +
    "window with the parent's exact origin, only when that is the publisher's. Visitors can set vendor trust in it.",
  security: [],
  request: { params: ContainerParams },
  responses: {
    200: html("The frame page"),
    // A container id the path cannot name (over 100 characters) is an unknown route: the JSON error body.
    404: {
      description: "Unknown or disabled container: a short HTML message (the error body for an id that is too long)",
      content: { ...html("").content, ...errorResponses(404)[404].content },
    },
    ...errorResponses(429),
  },
});
