import { sha256Hex } from "../lib/crypto";
import { defaultRoleRows } from "../services/companies";
import { insertChunks } from "./batch";
import type { Db } from "./client";
import { rebuildRosters } from "./rosters";
import * as t from "./schema";

/**
 * The demo world (README, "The demo world"), loaded by `npm run dev` into the local D1
 * and by the test setup. Every row has a fixed id and is inserted with
 * ON CONFLICT DO NOTHING, so loading twice changes nothing.
 * The tokens are for local development only; never load this remotely.
 */
export const DEMO = {
  companies: { acme: 1, globex: 2, peopleFinder: 3, spyDirectory: 4, whitePagesArchive: 5, dailyNews: 6, oldBlog: 7 },
  vendors: { adMetrics: 8, trackBuddy: 9, pixelPartners: 10 },
  people: { alice: 1, bob: 2, carol: 3 },
  tokens: {
    alice: "pk_demo_alice",
    bob: "pk_demo_bob",
    carol: "pk_demo_carol",
    telephony: "sk_demo_telephony",
    scanner: "sk_demo_scanner",
  },
  acmePhone: "+14155550100",
  bobPhone: "+14155550199",
  securePool: Array.from({ length: 10 }, (_, i) => `+1202555${String(101 + i).padStart(4, "0")}`),
} as const;

const C = DEMO.companies;
const V = DEMO.vendors;
const P = DEMO.people;
const created = new Date("2026-01-05T09:00:00.000Z");

type Row<T extends { $inferInsert: unknown }> = T["$inferInsert"];

const companyRows = (
  [
    {
      id: C.acme,
      kind: "employer",
      name: "Acme Corp",
      slug: "acme",
      url: "https://acme.example",
      logo: "https://acme.example/logo.png",
    },
    { id: C.globex, kind: "employer", name: "Globex", slug: "globex", url: "https://globex.example" },
    {
      id: C.peopleFinder,
      kind: "site",
      name: "PeopleFinder",
      slug: "peoplefinder",
      url: "https://peoplefinder.example",
      scanner: true,
    },
    {
      id: C.spyDirectory,
      kind: "site",
      name: "SpyDirectory",
      slug: "spydirectory",
      url: "https://spydirectory.example",
      scanner: true,
    },
    {
      id: C.whitePagesArchive,
      kind: "site",
      name: "WhitePages Archive",
      slug: "whitepages-archive",
      url: "https://whitepages-archive.example",
      scanner: false,
    },
    {
      id: C.dailyNews,
      kind: "publisher",
      name: "Daily News",
      slug: "dailynews",
      url: "https://dailynews.example",
      domain: "dailynews.example",
      logo: "https://dailynews.example/logo.png",
    },
    {
      id: C.oldBlog,
      kind: "publisher",
      name: "Old Blog",
      slug: "oldblog",
      url: "https://oldblog.example",
      domain: "oldblog.example",
    },
    {
      id: V.adMetrics,
      kind: "vendor",
      name: "AdMetrics",
      slug: "admetrics",
      url: "https://admetrics.example",
      logo: "https://admetrics.example/logo.png",
      profileUrl: "https://trust.example/vendors/admetrics",
    },
    {
      id: V.trackBuddy,
      kind: "vendor",
      name: "TrackBuddy",
      slug: "trackbuddy",
      url: "https://trackbuddy.example",
      logo: "https://trackbuddy.example/logo.png",
      profileUrl: "https://trust.example/vendors/trackbuddy",
    },
    {
      id: V.pixelPartners,
      kind: "vendor",
      name: "Pixel Partners",
      slug: "pixelpartners",
      url: "https://pixelpartners.example",
      logo: "https://pixelpartners.example/logo.png",
      profileUrl: "https://trust.example/vendors/pixelpartners",
    },
  ] satisfies Row<typeof t.companies>[]
).map((row) => ({ createdAt: created, updatedAt: created, ...row }));

const peopleRows = (
  [
    { id: P.alice, firstName: "Alice", lastName: "Admin", dob: "1984-03-14" },
    { id: P.bob, firstName: "Bob", lastName: "Builder", dob: "1990-07-02" },
    { id: P.carol, firstName: "Carol", lastName: "Chief", dob: "1979-11-23" },
  ] satisfies Row<typeof t.people>[]
).map((row) => ({ createdAt: created, updatedAt: created, ...row }));

/** Role ids: Acme's Admin, HR, Viewer are 1–3, Globex's 4–6 (DEFAULT_ROLES order). */
const roleRows = [C.acme, C.globex].flatMap((companyId, c) =>
  defaultRoleRows(companyId).map((role, r) => ({ id: c * 3 + r + 1, ...role })),
);
const ROLE = { acmeAdmin: 1, acmeViewer: 3, globexAdmin: 4 };

export async function demoWorldStatements(db: Db) {
  const tokens = await Promise.all(
    [
      { id: 1, token: DEMO.tokens.alice, personId: P.alice },
      { id: 2, token: DEMO.tokens.bob, personId: P.bob },
      { id: 3, token: DEMO.tokens.carol, personId: P.carol },
      { id: 4, token: DEMO.tokens.telephony, serviceName: "telephony", scopes: ["calls:lookup"] },
      { id: 5, token: DEMO.tokens.scanner, serviceName: "scanner", scopes: ["scans:write"] },
    ].map(async ({ token, ...row }) => ({
      ...row,
      tokenHash: await sha256Hex(token),
      prefix: token.slice(0, 8),
      createdAt: created,
    })),
  );

  return [
    ...insertChunks(db, t.companies, companyRows),
    ...insertChunks(db, t.companyPhones, [
      { id: 1, companyId: C.acme, countryCode: "1", phoneNumber: "4155550100", e164: DEMO.acmePhone, status: "verified" },
    ]),
    ...insertChunks(db, t.people, peopleRows),
    ...insertChunks(db, t.personEmails, [
      { id: 1, personId: P.alice, email: "alice@acme.example", primary: true, employerCompanyId: C.acme },
      { id: 2, personId: P.bob, email: "bob@acme.example", primary: true, employerCompanyId: C.acme },
      { id: 3, personId: P.carol, email: "carol@globex.example", primary: true, employerCompanyId: C.globex },
    ]),
    ...insertChunks(db, t.personPhones, [
      { id: 1, personId: P.bob, countryCode: "1", phoneNumber: "4155550199", e164: DEMO.bobPhone, primary: true },
    ]),
    ...insertChunks(db, t.personAddresses, [
      {
        id: 1,
        personId: P.alice,
        primary: true,
        line1: "1 Market St",
        city: "San Francisco",
        region: "CA",
        postalCode: "94105",
        country: "US",
      },
      {
        id: 2,
        personId: P.bob,
        primary: true,
        line1: "200 Mission St",
        line2: "Apt 4",
        city: "San Francisco",
        region: "CA",
        postalCode: "94105",
        country: "US",
      },
      {
        id: 3,
        personId: P.carol,
        primary: true,
        line1: "42 Elm St",
        city: "Springfield",
        region: "IL",
        postalCode: "62701",
        country: "US",
      },
    ]),
    ...insertChunks(db, t.licenses, [
      { id: "scan", name: "Scan", price: 0, currency: "USD", fullScan: false, fullDelete: false },
      { id: "protect", name: "Protect", price: 9900, currency: "USD", fullScan: true, fullDelete: true },
    ]),
    ...insertChunks(db, t.licenseSites, [
      { licenseId: "scan", siteId: C.peopleFinder },
      { licenseId: "scan", siteId: C.spyDirectory },
      { licenseId: "protect", siteId: C.peopleFinder },
      { licenseId: "protect", siteId: C.spyDirectory },
      { licenseId: "protect", siteId: C.whitePagesArchive },
    ]),
    ...insertChunks(db, t.companySeats, [
      { companyId: C.acme, licenseId: "scan", quantity: 10, updatedAt: created },
      { companyId: C.acme, licenseId: "protect", quantity: 5, updatedAt: created },
    ]),
    ...insertChunks(db, t.roles, roleRows),
    ...insertChunks(db, t.memberships, [
      {
        id: 1,
        companyId: C.acme,
        personId: P.alice,
        licenseId: "protect",
        licenseStartAt: created,
        createdAt: created,
        updatedAt: created,
      },
      {
        id: 2,
        companyId: C.acme,
        personId: P.bob,
        licenseId: "scan",
        licenseStartAt: created,
        createdAt: created,
        updatedAt: created,
      },
      { id: 3, companyId: C.globex, personId: P.carol, createdAt: created, updatedAt: created },
    ]),
    ...insertChunks(db, t.membershipRoles, [
      { membershipId: 1, roleId: ROLE.acmeAdmin },
      { membershipId: 2, roleId: ROLE.acmeViewer },
      { membershipId: 3, roleId: ROLE.globexAdmin },
    ]),
    ...insertChunks(db, t.accessTokens, tokens),
    ...insertChunks(
      db,
      t.secureNumbers,
      DEMO.securePool.map((e164, i) => ({
        id: i + 1,
        e164,
        countryCode: "1",
        number: e164.slice(2),
        createdAt: created,
      })),
    ),
    ...insertChunks(db, t.consentContainers, [
      { id: 1, publisherId: C.dailyNews, enabled: true, createdAt: created },
      { id: 2, publisherId: C.oldBlog, enabled: false, createdAt: created },
    ]),
    ...insertChunks(db, t.containerVendors, [
      { containerId: 1, vendorId: V.adMetrics, position: 1, category: "analytics" },
      { containerId: 1, vendorId: V.trackBuddy, position: 2, category: "advertising" },
      { containerId: 1, vendorId: V.pixelPartners, position: 3, category: "social" },
      { containerId: 2, vendorId: V.adMetrics, position: 1, category: "analytics" },
    ]),
    ...insertChunks(db, t.companyTrust, [
      { personId: P.alice, companyId: V.adMetrics, trust: "trusted", updatedAt: created },
      { personId: P.alice, companyId: V.trackBuddy, trust: "negative", updatedAt: created },
    ]),
  ];
}

/** Loads the demo world in one atomic batch; safe to run on an already seeded database. */
export async function loadDemoWorld(db: Db) {
  const [first, ...rest] = await demoWorldStatements(db);
  if (!first) return;
  // Its rows are inserted directly, so the company rosters are built from them at the end.
  await db.batch([first, ...rest, rebuildRosters(db)]);
}
