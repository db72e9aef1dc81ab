/**
 * The webhook events: the names a company subscribes to and every delivery
 * carries as `type` (docs/webhooks.md). Commands record them
 * (services/outbox.ts); the webhooks routes validate and document them.
 */
export const EVENT_NAMES = [
  "scan:started",
  "scan:completed",
  "scan:not_found",
  "scan:found",
  "scan:failed",
  "exposure:created",
  "exposure:requested",
  "exposure:closed",
  "request:created",
  "request:closed",
  "person:created",
  "person:updated",
  "person:removed",
] as const;

export type EventName = (typeof EVENT_NAMES)[number];

/** The event of `POST /webhooks/{id}/test`; not one subscribers choose. */
export const TEST_EVENT = "webhook:test";

/* ---------- the catalogue `GET /companies/{company_id}/webhooks/events` answers ---------- */

const site = (id: number, name: string, slug: string) => ({ id, name, slug, logo: "", url: `https://${slug}.example` });
const SITE = site(3, "PeopleFinder", "peoplefinder");
const SCAN = { scan_id: "scan-7f3a", person_id: 2 };
const LISTING = {
  url: "https://peoplefinder.example/p/bob-builder",
  data: { name: "Bob Builder", city: "San Francisco" },
};
const exposure = (status: string, updatedAt: string) => ({
  id: 31,
  employee_id: 2,
  status,
  site: SITE,
  ...LISTING,
  created_at: "2026-02-01T10:04:01.120Z",
  updated_at: updatedAt,
});
const person = {
  id: 12,
  first_name: "Dana",
  middle_name: null,
  last_name: "Doe",
  display_name: "Dana Doe",
  dob: "1990-07-02",
  akas: [],
  addresses: [
    {
      id: 40,
      primary: true,
      line_1: "1 Market St",
      line_2: null,
      city: "San Francisco",
      region: "CA",
      postal_code: "94105",
      country: "US",
    },
  ],
  emails: [{ id: 55, primary: true, email: "dana@acme.example" }],
  phone_numbers: [{ id: 61, primary: true, country_code: "1", phone_number: "4155550123", phone_full: "+14155550123" }],
  last_scan_at: null,
  license: {
    type: "scan",
    price: 1000,
    start_date: "2026-02-01T09:00:00.000Z",
    end_date: null,
    renews: 1,
    prorate_on_renewal: 0,
  },
  roles: ["Viewer"],
  risk_score: 0,
  exposures: { total: 0, pending: 0, in_progress: 0, closed: 0, not_found: 0 },
  last_login: null,
  created_at: "2026-02-01T09:00:00.000Z",
};

/**
 * Each event's one-line description and a sample `data` (docs/webhooks.md
 * shows the same bodies; a test checks both against the delivery schemas).
 */
export const EVENT_CATALOG: Record<EventName, { description: string; at: string; data: Record<string, unknown> }> = {
  "scan:started": {
    description: "A scan of one of the company's people started",
    at: "2026-02-01T10:00:00.000Z",
    data: { ...SCAN, at: "2026-02-01T10:00:00.000Z" },
  },
  "scan:completed": {
    description: "A scan finished on every site",
    at: "2026-02-01T10:20:00.000Z",
    data: { ...SCAN, at: "2026-02-01T10:20:00.000Z" },
  },
  "scan:not_found": {
    description: "A site was scanned and does not list the person",
    at: "2026-02-01T10:05:00.000Z",
    data: { ...SCAN, site: site(4, "SpyDirectory", "spydirectory"), at: "2026-02-01T10:05:00.000Z" },
  },
  "scan:found": {
    description: "A site lists the person (with the listing)",
    at: "2026-02-01T10:04:00.000Z",
    data: { ...SCAN, site: SITE, at: "2026-02-01T10:04:00.000Z", ...LISTING },
  },
  "scan:failed": {
    description: "A site could not be scanned",
    at: "2026-02-01T10:06:00.000Z",
    data: { ...SCAN, site: site(5, "WhitePages Archive", "whitepages-archive"), at: "2026-02-01T10:06:00.000Z" },
  },
  "exposure:created": {
    description: "A listing found that was not already open (`pending`)",
    at: "2026-02-01T10:04:00.000Z",
    data: exposure("pending", "2026-02-01T10:04:01.120Z"),
  },
  "exposure:requested": {
    description: "The site was asked to remove the listing (`in_progress`)",
    at: "2026-02-01T11:00:00.000Z",
    data: exposure("in_progress", "2026-02-01T11:00:00.310Z"),
  },
  "exposure:closed": {
    description: "The scanner confirmed the listing's removal (`closed`)",
    at: "2026-02-03T08:30:00.000Z",
    data: exposure("closed", "2026-02-03T08:30:00.502Z"),
  },
  "request:created": {
    description: "A removal request was sent to the site (with `exposure:requested`)",
    at: "2026-02-01T11:00:00.000Z",
    data: exposure("in_progress", "2026-02-01T11:00:00.310Z"),
  },
  "request:closed": {
    description: "A removal request was completed (with `exposure:closed`)",
    at: "2026-02-03T08:30:00.000Z",
    data: exposure("closed", "2026-02-03T08:30:00.502Z"),
  },
  "person:created": {
    description: "An employee was added to the company",
    at: "2026-02-01T09:00:00.000Z",
    data: person,
  },
  "person:updated": {
    description: "An employee's details, roles or license changed",
    at: "2026-02-02T09:00:00.000Z",
    data: {
      ...person,
      middle_name: "J",
      display_name: "Dana J Doe",
      akas: [{ id: 3, first_name: "Dee", middle_name: null, last_name: "Doe" }],
      addresses: [],
      phone_numbers: [],
      last_scan_at: "2026-02-01T10:20:00.000Z",
      license: null,
      roles: ["Viewer", "HR"],
      risk_score: 40,
      exposures: { total: 1, pending: 1, in_progress: 0, closed: 0, not_found: 2 },
      last_login: "2026-02-02T08:55:12.000Z",
    },
  },
  "person:removed": {
    description: "An employee left the company (only the id)",
    at: "2026-02-04T12:00:00.000Z",
    data: { id: 12 },
  },
};

/** The catalogue as the API answers it: every event, its description and a sample delivery body. */
export const eventCatalog = () =>
  EVENT_NAMES.map((event) => {
    const { description, at, data } = EVENT_CATALOG[event];
    return { event, description, sample: { type: event, timestamp: at, data } };
  });
