import { notFound } from "../../lib/errors";
import { containerVendorsFor, findEnabledContainer, originAllowed } from "../../services/consent";
import { tokenHasValidShape, verifyToken } from "../../services/tokens";
import type { AppRouteHandler } from "../../types";
import type * as routes from "./vcc.routes";

export const loadContainer: AppRouteHandler<typeof routes.loadContainer> = async (c) => {
  const { container_id } = c.req.valid("param");
  const { session } = c.req.valid("cookie");
  const db = c.var.db;

  const container = await findEnabledContainer(db, container_id);
  if (!container) throw notFound(`container ${JSON.stringify(container_id)} does not exist or is disabled`);

  // A bad or missing cookie is not an error here: the visitor is simply anonymous.
  let personId: number | null = null;
  if (session && tokenHasValidShape(session)) {
    const check = await verifyToken(db, session, new Date());
    if (check.ok && check.principal.kind === "person") personId = check.principal.personId;
  }

  const origin = c.req.header("Origin");
  c.header("Vary", "Origin");
  c.header("Cache-Control", "private, no-store");
  if (originAllowed(origin, container.domain)) {
    c.header("Access-Control-Allow-Origin", origin!);
    c.header("Access-Control-Allow-Credentials", "true");
  }

  return c.json(
    {
      is_authenticated: personId !== null,
      company: {
        slug: container.slug,
        name: container.name,
        domain: container.domain ?? "",
        logo: container.logo ?? "",
      },
      vendors: await containerVendorsFor(db, container.containerId, personId),
    },
    200,
  );
};
