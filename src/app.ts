import { bodyLimit } from "hono/body-limit";
import { HTTPException } from "hono/http-exception";
import { matchedRoutes } from "hono/route";
import type { Context } from "hono";
import { API_REFERENCE_PATH, apiReferenceAsset, apiReferencePage } from "./lib/api-reference";
import { ApiError, errorBody, loggableError, type ErrorStatus } from "./lib/errors";
import { createRouter } from "./routes/create-router";
import { commonHeaderComponents, documentFor } from "./lib/openapi";
import { identify } from "./middleware/auth";
import { database } from "./middleware/db";
import { dateHeader } from "./middleware/date";
import { rateLimit } from "./middleware/rate-limit";
import { requestId } from "./middleware/request-id";
import { RINGING_PATH } from "./middleware/request-kind";
import { twimlRefusals } from "./middleware/twiml-answers";
import buzz from "./routes/buzz/buzz.index";
import companies, { seedFormRouter } from "./routes/companies/companies.index";
import contacts from "./routes/contacts/contacts.index";
import health from "./routes/health/health.index";
import vcc from "./routes/vcc/vcc.index";
import scans from "./routes/scans/scans.index";
import webhooks from "./routes/webhooks/webhooks.index";
import employees from "./routes/employees/employees.index";
import licenses from "./routes/licenses/licenses.index";
import admin from "./routes/admin/admin.index";
import me from "./routes/me/me.index";
import auth from "./routes/auth/auth.index";

const MAX_BODY_BYTES = 1024 * 1024;

/** Area routers, mounted at the root: each declares its full paths. */
const areas = [health, auth, me, buzz, companies, vcc, webhooks, scans, employees, licenses, contacts, admin];

export function createApp() {
  const app = createRouter();

  app.use(dateHeader);
  app.use(requestId);
  // A trust-lookup that asked for TwiML is answered in TwiML, refusals included (docs/providers.md).
  app.use(RINGING_PATH, twimlRefusals);
  app.use(
    bodyLimit({
      maxSize: MAX_BODY_BYTES,
      onError: () => {
        throw new ApiError(413, "the request body is larger than 1 MiB");
      },
    }),
  );
  app.use(database);
  app.use(identify);
  app.use(rateLimit);

  for (const area of areas) app.route("/", area);
  app.route("/", seedFormRouter);

  app.openAPIRegistry.registerComponent("securitySchemes", "bearerAuth", {
    type: "http",
    scheme: "bearer",
    description: "`Authorization: Bearer <token>`; person tokens start with `pk_`, service tokens with `sk_`.",
  });
  for (const { name, header } of commonHeaderComponents()) {
    app.openAPIRegistry.registerComponent("headers", name, header);
  }
  app.doc31("/openapi.json", (c) => documentFor(new URL(c.req.url).origin));
  app.get(API_REFERENCE_PATH, apiReferencePage);
  app.get(`${API_REFERENCE_PATH}/:asset`, apiReferenceAsset);

  app.notFound((c) => c.json(errorBody(404, `there is no route ${c.req.method} ${c.req.path}`), 404));
  app.onError((err, c) => {
    if (err instanceof ApiError) return c.json(errorBody(err.statusCode, err.detail), err.statusCode, err.headers);
    const framework = fromFrameworkError(err);
    if (framework) return c.json(errorBody(framework.status, framework.detail), framework.status);
    const id = c.var.requestId;
    // Never the path's values, the query string, SQL text or bound values: personal data stays out of logs.
    console.error(
      JSON.stringify({ level: "error", requestId: id, method: c.req.method, route: routeOf(c), ...loggableError(err) }),
    );
    return c.json(errorBody(500, `something went wrong on our side; quote request id ${id} when reporting it`), 500);
  });

  return app;
}

/** The route pattern that matched (`/contacts/:id`), not the path with its values. */
function routeOf(c: Context): string {
  try {
    return matchedRoutes(c).findLast((route) => route.method !== "ALL")?.path ?? "(no route)";
  } catch {
    return "(no route)";
  }
}

/**
 * Hono and its validators throw plain HTTPExceptions for malformed JSON (400)
 * and an unexpected Content-Type (415); docs/decisions.md answers both with 400.
 */
function fromFrameworkError(err: Error): { status: ErrorStatus; detail: string } | null {
  if (!(err instanceof HTTPException)) return null;
  if (err.status === 415)
    return { status: 400, detail: "the request body must be JSON (Content-Type: application/json)" };
  if (err.status === 400) {
    const message = err.message || "the request could not be read";
    return { status: 400, detail: message.charAt(0).toLowerCase() + message.slice(1) };
  }
  return null;
}
