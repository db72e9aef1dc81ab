import { index, integer, primaryKey, sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";
import { companies } from "./companies";
import { cascadeRef, createdAt, flag, id } from "./columns";

/**
 * A publisher's consent container. Its public id is the publisher company's
 * slug (docs/decisions.md), so a publisher has at most one container.
 */
export const consentContainers = sqliteTable(
  "consent_containers",
  {
    id: id(),
    publisherId: cascadeRef("publisher_id", () => companies.id),
    enabled: flag("enabled").notNull().default(true),
    createdAt: createdAt(),
  },
  (t) => [uniqueIndex("consent_containers_publisher_uq").on(t.publisherId)],
);

/** Vendors of a container, in the publisher's configured order. */
export const containerVendors = sqliteTable(
  "container_vendors",
  {
    containerId: cascadeRef("container_id", () => consentContainers.id),
    vendorId: cascadeRef("vendor_id", () => companies.id),
    position: integer("position").notNull(),
    category: text("category").notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.containerId, t.vendorId] }),
    index("container_vendors_order_idx").on(t.containerId, t.position),
  ],
);
