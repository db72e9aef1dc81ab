import { env } from "cloudflare:workers";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { addMember, createCompany } from "../../src/routes/admin/admin.routes";
import { heartbeat, listActivity } from "../../src/routes/buzz/buzz.routes";
import { getCompany } from "../../src/routes/companies/companies.routes";
import { addCompanyPhone, listCompanyPhones } from "../../src/routes/companies/phones.routes";
import { listCompanyTrust } from "../../src/routes/contacts/company-trust.routes";
import { listContacts, listTrustRequests, postContacts } from "../../src/routes/contacts/contacts.routes";
import {
  createEmployee,
  exposureHistory,
  getEmployee,
  listEmployees,
  listExposures,
} from "../../src/routes/employees/employees.routes";
import { listCompanyLicenses, purchaseCompanyLicenses } from "../../src/routes/licenses/licenses.routes";
import { addMyPhone, listMyDevices, listMyPhones } from "../../src/routes/me/me.routes";
import {
  createWebhook,
  getHistoryEntry,
  listHistory,
  listWebhooks,
  testWebhook,
} from "../../src/routes/webhooks/webhooks.routes";
import { answer, call, employeeBody, fresh, insertToken, sendChat } from "../helpers";

/*
 * Tenant isolation, a regression suite for docs/security.md, "Tenancy": nothing crosses tenants, and
 * another tenant's resource is a 404, the answer of one that does not exist. Two companies (A, the
 * attacker; B, the victim), each with an Admin and resources of its own; their Admins as persons with
 * data of their own. Every route that takes an id of a tenant's resource is called as the other
 * tenant, with the victim's ids, and with the attacker's own company id but the victim's resource ids.
 * Each must answer 404 (403 where the docs say) and change nothing the victim can see. Every answer
 * read is checked against its route's response schema (`answer`).
 */

vi.setConfig({ testTimeout: 60_000, hookTimeout: 120_000 });

const run = crypto.randomUUID().slice(0, 8);
const OPERATOR = `sk_test_iso_operator_${run}`;
const SCANNER = `sk_test_iso_scanner_${run}`;
const RECEIVER = "https://receiver.iso.test/";

const op = (method: string, path: string, body?: unknown) => call(path, { method, body, token: OPERATOR });

/** The scanner reports a scan of `personId` that found them on PeopleFinder at `url`, on `day`. */
async function scanFound(personId: number, scan: string, url: string, day: string) {
  const posted = await call("/internal/scan-events", {
    method: "POST",
    token: SCANNER,
    body: [
      { type: "started", scan_id: scan, person_id: personId, at: `${day}T10:00:00Z` },
      { type: "found", scan_id: scan, person_id: personId, site_id: 3, url, at: `${day}T10:01:00Z` },
    ],
  });
  expect(posted.status, await posted.clone().text()).toBe(202);
}

type Tenant = {
  company: number;
  admin: number;
  token: string;
  employee: number;
  employeeEmail: string;
  webhook: number;
  history: string;
  phone: number;
  exposure: number | null;
  contact: number;
  myPhone: number;
  device: number;
};

const api = (token: string) => ({
  get: (path: string) => call(path, { token }),
  send: (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) =>
    call(path, { method, body, token, headers }),
});

/** A call of a sweep: method, path, body, and the statuses it may answer (404 unless said). */
type Probe = [method: string, path: string, body?: unknown, ok?: number[]];

/** Makes each call as `token`; returns every answer that was not one of its allowed statuses, with its text. */
async function unexpectedAnswers(token: string, calls: Probe[]): Promise<string[]> {
  const wrong: string[] = [];
  for (const [method, path, body, ok = [404]] of calls) {
    const r = await api(token).send(method, path, body);
    const text = await r.text();
    if (!ok.includes(r.status)) wrong.push(`${method} ${path} -> ${r.status} ${text.slice(0, 200)}`);
  }
  return wrong;
}

let phoneSeq = Math.floor(Math.random() * 800) + 100;
const newPhone = () => `+1415555${String(phoneSeq++).padStart(4, "0")}`;

async function makeTenant(tag: string): Promise<Tenant> {
  const company = await answer(
    await op("POST", "/internal/companies", { kind: "employer", name: `Iso ${tag}`, slug: `iso-${tag}-${run}` }),
    201,
    createCompany,
  );
  const seat = await answer(
    await op("POST", `/internal/companies/${company.id}/members`, {
      first_name: `Admin${tag}`,
      last_name: "Iso",
      email: `admin.${tag}.${run}@iso-${tag}.example`,
      roles: ["Admin"],
    }),
    201,
    addMember,
  );
  const token = `pk_test_iso_${tag}_${crypto.randomUUID().replaceAll("-", "")}`;
  await insertToken(token, { personId: seat.person_id });
  const me = api(token);
  const employeeEmail = `${fresh(`emp-${tag}`)}@iso-${tag}.example`;
  const employee = await answer(
    await me.send(
      "POST",
      `/companies/${company.id}/employees`,
      employeeBody("x", {
        license: null,
        emails: [{ email: employeeEmail }],
        first_name: `Emp${tag}`,
        phone_numbers: [{ phone_full: newPhone(), primary: true }],
      }),
    ),
    200,
    createEmployee,
  );
  const webhook = await answer(
    await me.send("POST", `/companies/${company.id}/webhooks`, {
      endpoint: `${RECEIVER}${tag}`,
      event: "person:updated",
    }),
    201,
    createWebhook,
  );
  const test = await answer(
    await me.send("POST", `/companies/${company.id}/webhooks/${webhook.id}/test`),
    200,
    testWebhook,
  );
  const phone = await answer(
    await me.send("POST", `/companies/${company.id}/phones`, { phone_full: newPhone(), label: `desk ${tag}` }),
    201,
    addCompanyPhone,
  );
  await answer(
    await me.send("POST", `/companies/${company.id}/licenses`, [{ id: "protect", quantity: 2 }]),
    201,
    purchaseCompanyLicenses,
  );
  // Person data of the Admin: a contact, a phone of their own, a device (their token).
  const [contact] = await answer(
    await me.send("POST", "/contacts", [{ display_name: `Friend of ${tag}`, phone_numbers: [newPhone()] }]),
    200,
    postContacts,
  );
  const myPhone = await answer(await me.send("POST", "/me/phones", { phone: newPhone() }), 201, addMyPhone);
  const devices = await answer(await me.get("/me/devices"), 200, listMyDevices);
  return {
    company: company.id,
    admin: seat.person_id,
    token,
    employee: employee.id,
    employeeEmail,
    webhook: webhook.id,
    history: test.history_id,
    phone: phone.id,
    exposure: null,
    contact: contact!.id,
    myPhone: myPhone.id,
    device: devices[0]!.id,
  };
}

let A: Tenant;
let B: Tenant;
/** A third person (a stranger to A) who asks B for trust and chats with B. */
let C: { id: number; token: string };

async function exposureOf(t: Tenant): Promise<number | null> {
  const list = await answer(
    await api(t.token).get(`/companies/${t.company}/employees/exposures?employees=${t.employee}&exposed=true`),
    200,
    listExposures,
  );
  return list[0]?.id ?? null;
}

beforeAll(async () => {
  const realFetch = globalThis.fetch;
  vi.spyOn(globalThis, "fetch").mockImplementation(async (input, init) =>
    new Request(input as RequestInfo, init).url.startsWith(RECEIVER)
      ? new Response(null, { status: 204 })
      : realFetch(input as RequestInfo, init),
  );
  await insertToken(OPERATOR, { serviceName: "operator", scopes: ["platform:admin"] });
  await insertToken(SCANNER, { serviceName: "scanner", scopes: ["scans:write"] });
  A = await makeTenant("a");
  B = await makeTenant("b");

  // Exposures through the scanner (the real queue consumer applies them).
  for (const t of [A, B]) {
    await scanFound(t.employee, `iso-scan-${t.employee}`, `https://peoplefinder.example/p/${t.employee}`, "2026-03-01");
  }
  for (let i = 0; i < 100 && (A.exposure === null || B.exposure === null); i++) {
    A.exposure ??= await exposureOf(A);
    B.exposure ??= await exposureOf(B);
    if (A.exposure === null || B.exposure === null) await new Promise((r) => setTimeout(r, 100));
  }

  // C: a person of no company; asks B for trust and chats with B.
  const cSeat = await answer(
    await op("POST", `/internal/companies/${B.company}/members`, {
      first_name: "Carl",
      last_name: "Third",
      email: `carl.${run}@iso-b.example`,
      roles: ["Viewer"],
    }),
    201,
    addMember,
  );
  C = { id: cSeat.person_id, token: `pk_test_iso_c_${crypto.randomUUID().replaceAll("-", "")}` };
  await insertToken(C.token, { personId: C.id });
  expect(
    (await api(C.token).send("POST", "/contacts/requests", { user_id: B.admin, contact_reason: "hi" })).status,
  ).toBe(201);
  await sendChat({ id: C.id, token: C.token }, B.admin);
  await sendChat({ id: B.admin, token: B.token }, C.id);
});

afterAll(() => vi.restoreAllMocks());

/** Everything B can see of its own tenant, to compare before and after the attacks. */
async function victimState() {
  const b = api(B.token);
  const c = B.company;
  return {
    company: await answer(await b.get(`/companies/${c}`), 200, getCompany),
    employee: await answer(await b.get(`/companies/${c}/employees/${B.employee}`), 200, getEmployee),
    employees: await answer(await b.get(`/companies/${c}/employees?per_page=100`), 200, listEmployees),
    webhooks: await answer(await b.get(`/companies/${c}/webhooks`), 200, listWebhooks),
    history: await answer(await b.get(`/companies/${c}/webhooks/history/${B.history}`), 200, getHistoryEntry),
    historyList: (await answer(await b.get(`/companies/${c}/webhooks/history?per_page=1000`), 200, listHistory)).map(
      (h) => [h.id, h.status, h.event],
    ),
    phones: await answer(await b.get(`/companies/${c}/phones`), 200, listCompanyPhones),
    licenses: await answer(await b.get(`/companies/${c}/licenses`), 200, listCompanyLicenses),
    exposures: await answer(
      await b.get(`/companies/${c}/employees/exposures?exposed=false&per_page=1000`),
      200,
      listExposures,
    ),
    exposureHistory:
      B.exposure === null
        ? null
        : await answer(await b.get(`/companies/${c}/employees/exposures/${B.exposure}/history`), 200, exposureHistory),
    contacts: await answer(await b.get(`/contacts?per_page=100`), 200, listContacts),
    myPhones: await answer(await b.get(`/me/phones`), 200, listMyPhones),
    devices: await answer(await b.get(`/me/devices`), 200, listMyDevices),
    requests: await answer(await b.get(`/contacts/requests`), 200, listTrustRequests),
    feed: (await answer(await b.get(`/apps/buzz/activity/0?limit=100`), 200, listActivity)).map((x) => x.id),
  };
}

describe("tenant isolation sweep", () => {
  it("setup made every resource", () => {
    for (const t of [A, B]) {
      for (const [k, v] of Object.entries(t)) expect(v, `${k} of tenant`).not.toBeNull();
    }
  });

  it("A's Admin with B's company_id: every company route is 404, nothing changes", async () => {
    const before = await victimState();
    const c = B.company;
    const calls: Probe[] = [
      ["GET", `/companies/${c}`],
      ["GET", `/companies/${c}/roles`],
      ["GET", `/companies/${c}/sites`],
      ["GET", `/companies/${c}/site/3`],
      ["GET", `/companies/${c}/sites/3`],
      ["GET", `/${c}/sites`],
      ["GET", `/${c}/site/3`],
      ["GET", `/${c}/sites/3`],
      ["GET", `/companies/${c}/phones`],
      ["POST", `/companies/${c}/phones`, { phone_full: newPhone() }],
      ["DELETE", `/companies/${c}/phones/${B.phone}`],
      ["GET", `/companies/${c}/employees`],
      ["GET", `/companies/${c}/employees/${B.employee}`],
      ["POST", `/companies/${c}/employees`, employeeBody(fresh("x"), { license: null })],
      ["POST", `/companies/${c}/employees/bulk`, [employeeBody(fresh("x"), { license: null })]],
      ["PUT", `/companies/${c}/employees/${B.employee}`, { first_name: "Mallory" }],
      ["DELETE", `/companies/${c}/employees/${B.employee}`],
      ["GET", `/companies/${c}/employees/exposures`],
      ["GET", `/companies/${c}/employees/exposures/${B.exposure}/history`],
      ["GET", `/companies/${c}/licenses`],
      ["GET", `/companies/${c}/licenses/protect`],
      ["POST", `/companies/${c}/licenses`, [{ id: "protect", quantity: 1 }]],
      ["GET", `/companies/${c}/webhooks`],
      ["GET", `/companies/${c}/webhooks/events`],
      ["GET", `/companies/${c}/webhooks/history`],
      ["GET", `/companies/${c}/webhooks/${B.webhook}`],
      ["POST", `/companies/${c}/webhooks`, { endpoint: `${RECEIVER}evil`, event: "person:updated" }],
      ["PATCH", `/companies/${c}/webhooks/${B.webhook}`, { endpoint: `${RECEIVER}evil` }],
      ["DELETE", `/companies/${c}/webhooks/${B.webhook}`],
      ["GET", `/companies/${c}/webhooks/history/${B.history}`],
      ["POST", `/companies/${c}/webhooks/history/${B.history}/resend`],
      ["POST", `/companies/${c}/webhooks/${B.webhook}/test`],
      ["POST", `/companies/${c}/webhooks/${B.webhook}/rotate-secret`],
      ["GET", `/contacts/employees/${c}`],
    ];
    expect(await unexpectedAnswers(A.token, calls)).toEqual([]);
    expect(await victimState()).toEqual(before);
  });

  it("A's Admin with A's own company_id and B's resource ids: 404, nothing changes", async () => {
    const before = await victimState();
    const c = A.company;
    const calls: Probe[] = [
      ["DELETE", `/companies/${c}/phones/${B.phone}`],
      ["GET", `/companies/${c}/employees/${B.employee}`],
      ["PUT", `/companies/${c}/employees/${B.employee}`, { first_name: "Mallory" }],
      ["PUT", `/companies/${c}/employees/${B.employee}`, { roles: ["Viewer"] }],
      ["PUT", `/companies/${c}/employees/${B.employee}`, { emails: [{ email: `${fresh("m")}@evil.example` }] }],
      ["PUT", `/companies/${c}/employees/${B.admin}`, { license: "protect" }],
      ["DELETE", `/companies/${c}/employees/${B.employee}`],
      ["DELETE", `/companies/${c}/employees/${B.admin}`],
      ["GET", `/companies/${c}/employees/exposures/${B.exposure}/history`],
      ["GET", `/companies/${c}/webhooks/${B.webhook}`],
      ["PATCH", `/companies/${c}/webhooks/${B.webhook}`, { endpoint: `${RECEIVER}evil` }],
      ["PATCH", `/companies/${c}/webhooks/${B.webhook}`, { active: false }],
      ["PATCH", `/companies/${c}/webhooks/${B.webhook}`, { active: true }],
      ["DELETE", `/companies/${c}/webhooks/${B.webhook}`],
      ["GET", `/companies/${c}/webhooks/history/${B.history}`],
      ["POST", `/companies/${c}/webhooks/history/${B.history}/resend`],
      ["POST", `/companies/${c}/webhooks/${B.webhook}/test`],
      ["POST", `/companies/${c}/webhooks/${B.webhook}/rotate-secret`],
    ];
    expect(await unexpectedAnswers(A.token, calls)).toEqual([]);
    expect(await victimState()).toEqual(before);
  });

  it("filters and bulk bodies naming B's ids find nothing of B", async () => {
    const a = api(A.token);
    const c = A.company;
    const exposures = await answer(
      await a.get(`/companies/${c}/employees/exposures?employees=${B.employee},${B.admin}&exposed=false`),
      200,
      listExposures,
    );
    expect(exposures).toEqual([]);
    const withStatus = await answer(
      await a.get(`/companies/${c}/employees/exposures?employees=${B.employee}&status=pending,in_progress,closed`),
      200,
      listExposures,
    );
    expect(withStatus).toEqual([]);
    const search = await answer(
      await a.get(`/companies/${c}/employees?search=${encodeURIComponent(B.employeeEmail)}`),
      200,
      listEmployees,
    );
    expect(search).toEqual([]);
    const searchPrefix = await answer(await a.get(`/companies/${c}/employees?search=emp-b`), 200, listEmployees);
    expect(searchPrefix).toEqual([]);
    const after = await answer(
      await a.get(`/companies/${c}/employees?after=${B.employee - 1}&per_page=100`),
      200,
      listEmployees,
    );
    expect(after.map((p) => p.id)).not.toContain(B.employee);
    // A's lists hold nothing of B's.
    const hist = await answer(await a.get(`/companies/${c}/webhooks/history?per_page=1000`), 200, listHistory);
    expect(hist.map((h) => h.id)).not.toContain(B.history);
    const hooks = await answer(await a.get(`/companies/${c}/webhooks`), 200, listWebhooks);
    expect(hooks.map((h) => h.id)).not.toContain(B.webhook);
    const phones = await answer(await a.get(`/companies/${c}/phones`), 200, listCompanyPhones);
    expect(phones.map((p) => p.id)).not.toContain(B.phone);
    const all = await answer(
      await a.get(`/companies/${c}/employees/exposures?exposed=false&per_page=1000`),
      200,
      listExposures,
    );
    expect(all.map((e) => e.id)).not.toContain(B.exposure);
    // Bulk and single creates naming B's employee's email: refused, no link to B's person.
    const bulk = await a.send("POST", `/companies/${c}/employees/bulk`, [
      employeeBody("x", { license: null, emails: [{ email: B.employeeEmail }] }),
    ]);
    expect(bulk.status).toBe(400);
    const takeEmail = await a.send("PUT", `/companies/${c}/employees/${A.employee}`, {
      emails: [{ email: B.employeeEmail }],
    });
    expect(takeEmail.status).toBe(400);
    const memberships = await env.DB.prepare("SELECT company_id FROM memberships WHERE person_id = ? ORDER BY 1")
      .bind(B.employee)
      .all<{ company_id: number }>();
    expect(memberships.results.map((r) => r.company_id)).toEqual([B.company]);
  });

  it("person A cannot read or change person B's data", async () => {
    const before = await victimState();
    const a = api(A.token);
    const calls: Probe[] = [
      ["GET", `/contacts/${B.contact}`],
      ["PUT", `/contacts/${B.contact}`, { display_name: "pwned" }],
      ["DELETE", `/contacts/${B.contact}`],
      ["DELETE", `/contacts/clear/${B.admin}`],
      ["POST", `/contacts/trust/${C.id}`, { trusted: 1 }],
      ["DELETE", `/me/devices/${B.device}`],
      ["PUT", `/me/devices/${B.device}/push`, { kind: "fcm", token: "x".repeat(40) }],
      ["DELETE", `/me/devices/${B.device}/push`],
      ["POST", `/me/phones/${B.myPhone}/verification`],
      ["POST", `/me/phones/${B.myPhone}/confirm`, { code: "123456" }],
      ["PUT", `/contacts/companies/${B.company}/trust`, { trust: "trusted" }],
    ];
    const wrong = await unexpectedAnswers(A.token, calls);
    // A sync naming B's contact id: refused, not B's contact changed.
    const sync = await a.send("POST", "/contacts", [{ id: B.contact, display_name: "pwned" }]);
    const syncText = await sync.text();
    const mine = await answer(await a.get(`/contacts?per_page=100`), 200, listContacts);
    if (sync.status === 200) wrong.push(`POST /contacts with B's contact id -> 200 ${syncText.slice(0, 200)}`);
    void mine;
    // A's reads hold nothing of B's.
    const feed = await answer(await a.get(`/apps/buzz/activity/0?limit=100`), 200, listActivity);
    for (const x of feed)
      if (x.sendable_id === C.id || x.receivable_id === C.id) wrong.push(`A's feed shows ${JSON.stringify(x)}`);
    const requests = await answer(await a.get(`/contacts/requests`), 200, listTrustRequests);
    if (requests.length > 0) wrong.push(`A's requests: ${JSON.stringify(requests)}`);
    const devices = await answer(await a.get(`/me/devices`), 200, listMyDevices);
    if (devices.some((d) => d.id === B.device)) wrong.push("A lists B's device");
    expect(wrong).toEqual([]);
    expect(await victimState()).toEqual(before);
  });

  it("service tokens reach only their own routes", async () => {
    const telephony = `sk_test_iso_tel_${run}`;
    await insertToken(telephony, { serviceName: "telephony", scopes: ["calls:lookup"] });
    const wrong: string[] = [];
    for (const token of [telephony, SCANNER]) {
      const s = api(token);
      const calls: Probe[] = [
        ["GET", `/companies/${B.company}`],
        ["GET", `/companies/${B.company}/employees`],
        ["GET", `/companies/${B.company}/employees/${B.employee}`],
        ["GET", `/companies/${B.company}/webhooks`],
        ["GET", `/companies/${B.company}/webhooks/history/${B.history}`],
        ["GET", `/companies/${B.company}/employees/exposures`],
        ["GET", `/licenses`],
        ["GET", `/me`],
        ["GET", `/me/devices`],
        ["GET", `/contacts`],
        ["GET", `/contacts/${B.contact}`],
        ["GET", `/contacts/requests`],
        ["GET", `/contacts/employees`],
        ["GET", `/apps/buzz/activity/0`],
        ["GET", `/apps/buzz/heartbeat`],
        ["GET", `/apps/buzz/blocked`],
        ["POST", `/apps/buzz/stream/tickets`],
        ["POST", `/internal/companies`, { kind: "employer", name: "X", slug: `x-${run}` }],
        ["GET", `/internal/company-phones`],
        ["POST", `/internal/company-phones/${B.phone}/verify`],
        ["GET", `/internal/status`],
      ];
      if (token === telephony)
        calls.push([
          "POST",
          `/internal/scan-events`,
          [{ type: "started", scan_id: "zz", person_id: B.employee, at: "2026-03-01T10:00:00Z" }],
        ]);
      else
        calls.push([
          "GET",
          `/apps/buzz/trust-lookup?number_code=1&number=4155550100&inbound_code=1&inbound=4155550101`,
        ]);
      for (const [method, path, body] of calls) {
        const r = await s.send(method, path, body);
        const text = await r.text();
        if (r.status !== 403)
          wrong.push(`${token.slice(0, 14)} ${method} ${path} -> ${r.status} ${text.slice(0, 160)}`);
      }
    }
    expect(wrong).toEqual([]);
  });
});

describe("a person shared by two companies", () => {
  let P: number;
  let eB: string;
  beforeAll(async () => {
    eB = `${fresh("shared")}@iso-b.example`;
    const created = await answer(
      await api(B.token).send(
        "POST",
        `/companies/${B.company}/employees`,
        employeeBody("x", { license: null, emails: [{ email: eB }], first_name: "Shared", roles: ["HR"] }),
      ),
      200,
      createEmployee,
    );
    P = created.id;
    const seat = await answer(
      await op("POST", `/internal/companies/${A.company}/members`, {
        first_name: "Shared",
        last_name: "Scully",
        email: eB,
        roles: ["Viewer"],
      }),
      201,
      addMember,
    );
    expect(seat.person_id).toBe(P);
  });

  it("A sees neither B's address of them nor finds them by it", async () => {
    const a = api(A.token);
    const person = await answer(await a.get(`/companies/${A.company}/employees/${P}`), 200, getEmployee);
    expect(JSON.stringify(person)).not.toContain(eB);
    expect(
      await answer(
        await a.get(`/companies/${A.company}/employees?search=${encodeURIComponent(eB)}`),
        200,
        listEmployees,
      ),
    ).toEqual([]);
    expect(await answer(await a.get(`/companies/${A.company}/employees?search=shared`), 200, listEmployees)).toEqual(
      [],
    );
  });

  it("A cannot change their personal details, nor open their account with an address of its own", async () => {
    const a = api(A.token);
    const path = `/companies/${A.company}/employees/${P}`;
    const before = await answer(await api(B.token).get(`/companies/${B.company}/employees/${P}`), 200, getEmployee);
    for (const body of [
      { first_name: "Mallory" },
      { phone_numbers: [{ phone_full: newPhone(), primary: true }] },
      { addresses: [] },
      { dob: "1970-01-01" },
    ]) {
      const r = await a.send("PUT", path, body);
      expect(r.status, `${JSON.stringify(body)}: ${await r.text()}`).toBe(409);
    }
    const eA = `${fresh("hijack")}@iso-a.example`;
    const put = await a.send("PUT", path, { emails: [{ email: eA, primary: true }] });
    expect(put.status, await put.clone().text()).toBe(200);
    expect((await call("/auth/codes", { method: "POST", body: { email: eA } })).status).toBe(202);
    const sent = await env.DB.prepare('SELECT count(*) AS n FROM dev_outbox WHERE "to" = ?')
      .bind(eA)
      .first<{ n: number }>();
    expect(sent!.n).toBe(0);
    const after = await answer(await api(B.token).get(`/companies/${B.company}/employees/${P}`), 200, getEmployee);
    expect({ ...after, last_login: null, updated_at: null }).toEqual({ ...before, last_login: null, updated_at: null });
  });

  it("A removing them leaves B's record of them whole, and A's view of their exposures goes", async () => {
    const scan = `iso-shared-${P}`;
    const posted = await call("/internal/scan-events", {
      method: "POST",
      token: SCANNER,
      body: [
        { type: "started", scan_id: scan, person_id: P, at: "2026-03-02T10:00:00Z" },
        {
          type: "found",
          scan_id: scan,
          person_id: P,
          site_id: 4,
          url: `https://spydirectory.example/p/${P}`,
          at: "2026-03-02T10:01:00Z",
        },
      ],
    });
    expect(posted.status).toBe(202);
    const listOf = async (t: Tenant) =>
      answer(
        await api(t.token).get(`/companies/${t.company}/employees/exposures?employees=${P}&exposed=false`),
        200,
        listExposures,
      );
    for (let i = 0; i < 100 && ((await listOf(A)).length === 0 || (await listOf(B)).length === 0); i++)
      await new Promise((r) => setTimeout(r, 100));
    const [inA] = await listOf(A);
    const [inB] = await listOf(B);
    expect(inA).toBeDefined();
    expect(inB).toBeDefined();
    // Each company's copy is its own: the other's id is 404.
    expect((await api(A.token).get(`/companies/${A.company}/employees/exposures/${inB!.id}/history`)).status).toBe(
      inA!.id === inB!.id ? 200 : 404,
    );

    const before = await answer(await api(B.token).get(`/companies/${B.company}/employees/${P}`), 200, getEmployee);
    expect((await api(A.token).send("DELETE", `/companies/${A.company}/employees/${P}`)).status).toBe(204);
    const after = await answer(await api(B.token).get(`/companies/${B.company}/employees/${P}`), 200, getEmployee);
    expect(after.emails).toEqual(before.emails);
    expect(after.roles).toEqual(before.roles);
    expect(await listOf(A)).toEqual([]);
    expect((await api(A.token).get(`/companies/${A.company}/employees/exposures/${inA!.id}/history`)).status).toBe(404);
    expect((await listOf(B)).map((e) => e.id)).toEqual([inB!.id]);
  });
});

describe("person-facing lookups of another tenant", () => {
  it("call-lookup as a person with another person's secure number is 404", async () => {
    const beat = await answer(await api(B.token).get("/apps/buzz/heartbeat"), 200, heartbeat);
    const n = beat.secure_number;
    if (!n) return;
    const r = await api(A.token).get(
      `/apps/buzz/call-lookup?number_code=${n.country_code}&number=${n.number}&inbound_code=1&inbound=4155550100`,
    );
    expect(r.status, await r.text()).toBe(404);
  });

  it("a site path naming another company is 404 and does not name it", async () => {
    const r = await api(A.token).get(`/companies/${A.company}/site/${B.company}`);
    const text = await r.text();
    expect(r.status, text).toBe(404);
    expect(text).not.toContain("Iso b");
  });

  it("a contact with B's employee's work email links to no one", async () => {
    const [contact] = await answer(
      await api(A.token).send("POST", "/contacts", [{ display_name: "Probe", emails: [B.employeeEmail] }]),
      200,
      postContacts,
    );
    expect(contact!.user_id).toBeNull();
  });

  it("company trust for B (no verified phone) is 404 and B is not listed", async () => {
    const r = await api(A.token).send("PUT", `/contacts/companies/${B.company}/trust`, { trust: "trusted" });
    expect(r.status, await r.clone().text()).toBe(404);
    const listed = await answer(await api(A.token).get("/contacts/companies"), 200, listCompanyTrust);
    expect(listed.map((x) => x.company.id)).not.toContain(B.company);
  });
});

describe("companies served from D1 (scans_in_object = 0)", () => {
  it("exposures and their history stay within the company", async () => {
    await env.DB.prepare("UPDATE companies SET scans_in_object = 0 WHERE id IN (?, ?)")
      .bind(A.company, B.company)
      .run();
    const ids: Record<string, number> = {};
    for (const [tag, t] of [
      ["a", A],
      ["b", B],
    ] as const) {
      const e = await answer(
        await api(t.token).send(
          "POST",
          `/companies/${t.company}/employees`,
          employeeBody("x", { license: null, emails: [{ email: `${fresh(`d1-${tag}`)}@iso-${tag}.example` }] }),
        ),
        200,
        createEmployee,
      );
      ids[tag] = e.id;
      await scanFound(e.id, `iso-d1-${e.id}`, `https://peoplefinder.example/d1/${e.id}`, "2026-03-03");
    }
    const listOf = async (t: Tenant, who: number) =>
      answer(
        await api(t.token).get(`/companies/${t.company}/employees/exposures?employees=${who}&exposed=false`),
        200,
        listExposures,
      );
    let exB: Awaited<ReturnType<typeof listOf>> = [];
    for (let i = 0; i < 100 && exB.length === 0; i++) {
      exB = await listOf(B, ids.b!);
      if (exB.length === 0) await new Promise((r) => setTimeout(r, 100));
    }
    expect(exB.length).toBe(1);
    const bId = exB[0]!.id;
    expect(await listOf(A, ids.b!)).toEqual([]);
    const allA = await answer(
      await api(A.token).get(`/companies/${A.company}/employees/exposures?exposed=false&per_page=1000`),
      200,
      listExposures,
    );
    expect(allA.map((e) => e.id)).not.toContain(bId);
    expect((await api(A.token).get(`/companies/${A.company}/employees/exposures/${bId}/history`)).status).toBe(404);
    expect((await api(A.token).get(`/companies/${B.company}/employees/exposures/${bId}/history`)).status).toBe(404);
    const emp = await answer(await api(A.token).get(`/companies/${A.company}/employees/${ids.a}`), 200, getEmployee);
    void emp;
  });
});

describe("company phone claims across tenants", () => {
  it("a claim on B's verified number is 409 naming no company; B's phone stays B's", async () => {
    const phones = await answer(await api(B.token).get(`/companies/${B.company}/phones`), 200, listCompanyPhones);
    const mine = phones.find((p) => p.id === B.phone)!;
    expect((await op("POST", `/internal/company-phones/${B.phone}/verify`)).status).toBe(200);
    const r = await api(A.token).send("POST", `/companies/${A.company}/phones`, { phone_full: mine.phone_full });
    const text = await r.text();
    expect(r.status, text).toBe(409);
    expect(text).not.toContain("Iso b");
    expect(text).not.toContain(String(B.company));
    expect((await api(A.token).send("DELETE", `/companies/${A.company}/phones/${B.phone}`)).status).toBe(404);
    const after = await answer(await api(B.token).get(`/companies/${B.company}/phones`), 200, listCompanyPhones);
    expect(after.find((p) => p.id === B.phone)!.status).toBe("verified");
  });
});
