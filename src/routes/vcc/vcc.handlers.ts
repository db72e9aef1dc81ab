import { getCookie } from "hono/cookie";
import { accepted } from "../../lib/answer";
import { forbidden } from "../../lib/errors";
import { personId } from "../../middleware/auth";
import {
  containerVendorsFor,
  enabledContainer,
  findEnabledContainer,
  publisherFrameAncestors,
  setVendorTrust,
} from "../../services/consent";
import { mintContainerToken, revokeContainerToken, tokenHasValidShape, verifyToken } from "../../services/tokens";
import type { AppRouteHandler } from "../../types";
import { frameNotFoundPage, framePage } from "./frame.page";
import { grantPublisherCors, isDevelopment } from "./vcc.middleware";
import type * as routes from "./vcc.routes";

export const loadContainer: AppRouteHandler<typeof routes.loadContainer> = async (c) => {
  const { container_id } = c.req.valid("param");
  const { session } = c.req.valid("cookie");
  const { deps } = c.var;

  // Sent on the 404 too: an answer that varies by Origin says so, whatever it is (docs/consent.md).
  c.header("Cache-Control", "private, no-store");
  c.header("Vary", "Origin");
  const { container } = accepted(await enabledContainer(deps, container_id));

  // A bad or missing cookie is not an error here: the visitor is simply anonymous.
  let personId: number | null = null;
  if (session && tokenHasValidShape(session)) {
    const check = await verifyToken(deps, session, new Date());
    if (check.ok && check.principal.kind === "person") personId = check.principal.personId;
  }

  grantPublisherCors(c, container.domain);

  return c.json(
    {
      is_authenticated: personId !== null,
      company: {
        slug: container.slug,
        name: container.name,
        domain: container.domain ?? "",
        logo: container.logo ?? "",
      },
      vendors: await containerVendorsFor(c.var.deps, container.containerId, personId),
    },
    200,
  );
};

export const setVendorTrustHandler: AppRouteHandler<typeof routes.setVendorTrust> = async (c) => {
  const { container_id, vendor_slug } = c.req.valid("param");
  const { trust } = c.req.valid("json");
  c.header("Cache-Control", "private, no-store");
  return c.json(await setVendorTrust(c.var.deps, personId(c.var.principal), container_id, vendor_slug, trust), 200);
};

export const vendorTrustPreflight: AppRouteHandler<typeof routes.vendorTrustPreflight> = async (c) => {
  c.header("Vary", "Origin");
  // An unknown or disabled container is a 404 here too, like on every container route.
  const { container } = accepted(await enabledContainer(c.var.deps, c.req.valid("param").container_id));
  grantPublisherCors(c, container.domain, true);
  return c.body(null, 204);
};

const COOKIE = "session";
const COOKIE_ATTRIBUTES = "Path=/apps/vcc; HttpOnly; Secure; SameSite=None";

export const createSession: AppRouteHandler<typeof routes.createSession> = async (c) => {
  const principal = c.var.principal;
  if (principal?.kind === "person" && principal.scope)
    throw forbidden("a container session needs a person's full token, not a container-scoped one");
  const token = await mintContainerToken(c.var.deps, personId(principal), principal!.tokenId, new Date());
  c.header("Set-Cookie", `${COOKIE}=${token}; ${COOKIE_ATTRIBUTES}`);
  c.header("Cache-Control", "no-store");
  return c.body(null, 204);
};

export const deleteSession: AppRouteHandler<typeof routes.deleteSession> = async (c) => {
  const session = getCookie(c, COOKIE);
  if (session && tokenHasValidShape(session)) await revokeContainerToken(c.var.deps, session, new Date());
  c.header("Set-Cookie", `${COOKIE}=; ${COOKIE_ATTRIBUTES}; Max-Age=0`);
  c.header("Cache-Control", "no-store");
  return c.body(null, 204);
};

export const frame: AppRouteHandler<typeof routes.frame> = async (c) => {
  const { container_id } = c.req.valid("param");
  const container = await findEnabledContainer(c.var.deps, container_id);
  const nonce = btoa(String.fromCharCode(...crypto.getRandomValues(new Uint8Array(16))));
  const development = isDevelopment(c);
  const headers = {
    "Cache-Control": "no-store",
    "X-Content-Type-Options": "nosniff",
    "Content-Security-Policy": [
      "default-src 'none'",
      `script-src 'nonce-${nonce}'`,
      `style-src 'nonce-${nonce}'`,
      "connect-src 'self'",
      "img-src https: data:",
      "base-uri 'none'",
      "form-action 'none'",
      `frame-ancestors ${container?.domain ? publisherFrameAncestors(container.domain, development) : "'none'"}`,
    ].join("; "),
  };
  if (!container?.domain) return c.html(frameNotFoundPage(container_id), 404, headers);
  return c.html(
    framePage({ nonce, id: container.slug, name: container.name, domain: container.domain, development }),
    200,
    headers,
  );
};
