import type { Context } from "hono";
import { ApiError } from "./errors";

/**
 * The interactive API reference at /docs: Swagger UI from the pinned `swagger-ui-dist`
 * package, served by the Worker itself (no CDN, works offline). wrangler.toml's
 * `[[rules]]` bundle its script and stylesheet as text modules (typed by `wrangler
 * types` in worker-configuration.d.ts); they are imported on first use, so scripts
 * that only build the app in Node (the OpenAPI lint) never load them.
 * The page's Content-Security-Policy allows nothing from another origin.
 */
export const API_REFERENCE_PATH = "/docs";

const ASSETS: Record<string, { type: string; load: () => Promise<{ default: string }> }> = {
  "swagger-ui-bundle.js": {
    type: "text/javascript; charset=utf-8",
    load: () => import("swagger-ui-dist/swagger-ui-bundle.js"),
  },
  "swagger-ui.css": { type: "text/css; charset=utf-8", load: () => import("swagger-ui-dist/swagger-ui.css") },
  "init.js": { type: "text/javascript; charset=utf-8", load: async () => ({ default: INIT }) },
};

/** Starts Swagger UI on the page's document (`data-openapi`); no validator badge (it calls out). */
const INIT = `window.ui = SwaggerUIBundle({
  url: document.getElementById("swagger-ui").dataset.openapi,
  dom_id: "#swagger-ui",
  deepLinking: true,
  validatorUrl: null,
  presets: [SwaggerUIBundle.presets.apis],
  layout: "BaseLayout",
});
`;

const PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Privacy Platform API</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="${API_REFERENCE_PATH}/swagger-ui.css">
<style>body { margin: 0; background: #fafafa; }</style>
</head>
<body>
<div id="swagger-ui" data-openapi="/openapi.json"></div>
<script src="${API_REFERENCE_PATH}/swagger-ui-bundle.js"></script>
<script src="${API_REFERENCE_PATH}/init.js"></script>
</body>
</html>
`;

/** Same-origin only; inline styles because Swagger UI sets style attributes. */
const CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "font-src 'self'",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join("; ");

export function apiReferencePage(c: Context) {
  c.header("Content-Security-Policy", CSP);
  c.header("Cache-Control", "no-cache");
  return c.html(PAGE);
}

export async function apiReferenceAsset(c: Context) {
  const name = c.req.param("asset") ?? "";
  const asset = Object.hasOwn(ASSETS, name) ? ASSETS[name] : undefined;
  if (!asset) throw new ApiError(404, `there is no route GET ${c.req.path}`);
  const { default: body } = await asset.load();
  return c.body(body, 200, {
    "Content-Type": asset.type,
    "Cache-Control": "public, max-age=3600",
    "X-Content-Type-Options": "nosniff",
  });
}
