import { and, eq, sql } from "drizzle-orm";
import { insertChunks } from "../db/batch";
import type { Db } from "../db/client";
import { inList } from "../db/sql";
import {
  companies,
  consentContainers,
  containerVendors,
  type CompanyKind,
  membershipRoles,
  memberships,
  people,
  personEmails,
  roles,
} from "../db/schema";
import { badRequest, conflict, notFound } from "../lib/errors";
import { companyRoles, defaultRoleRows, roleNamed } from "./companies";
import { containerVendorsFor } from "./consent";
import { renderPersonDeliveries } from "./events";
import { touchRosters } from "../db/rosters";
import { WriteBatch } from "./outbox";
import { forgetBeforeReturn } from "./company-forgets";
import type { Deps } from "./deps";
import { loadPerson } from "./people";

/*
 * The platform operator's commands (docs/decisions.md, "Operating the
 * platform"): companies of every kind, an employer's first members, and
 * publishers' containers. Each checks first (a 4xx writes nothing), then
 * writes one WriteBatch with its consequences.
 */

export type NewCompany = {
  kind: CompanyKind;
  name: string;
  slug: string;
  url?: string;
  logo?: string;
  domain?: string;
  scanner?: boolean;
  profile_url?: string;
};

export type CompanyChanges = {
  name?: string;
  url?: string;
  logo?: string | null;
  domain?: string;
  scanner?: boolean;
  status?: "enabled" | "disabled";
};

const columns = {
  id: companies.id,
  kind: companies.kind,
  name: companies.name,
  slug: companies.slug,
  status: companies.status,
  url: companies.url,
  logo: companies.logo,
  domain: companies.domain,
  scanner: companies.scanner,
  profileUrl: companies.profileUrl,
};

type Row = { [K in keyof typeof columns]: (typeof companies.$inferSelect)[K] };

/** The PlatformCompany wire shape. */
const toPlatformCompany = (row: Row) => ({
  id: row.id,
  kind: row.kind,
  name: row.name,
  slug: row.slug,
  status: row.status,
  url: row.url,
  logo: row.logo ?? "",
  domain: row.domain,
  scanner: row.scanner,
  profile_url: row.profileUrl,
});

const slugTaken = (slug: string) =>
  conflict(`the slug ${JSON.stringify(slug)} is already taken by another company; choose another`);

/** POST /internal/companies: an employer also gets the default roles (Admin, HR, Viewer). */
export async function createCompany(deps: Deps, input: NewCompany) {
  const { db } = deps;
  if (await db.select({ id: companies.id }).from(companies).where(eq(companies.slug, input.slug)).get()) {
    throw slugTaken(input.slug);
  }
  const batch = new WriteBatch(deps);
  const { now } = batch;
  const insert = batch.add(
    db
      .insert(companies)
      .values({
        kind: input.kind,
        name: input.name,
        slug: input.slug,
        url: input.url ?? "",
        logo: input.logo ?? null,
        domain: input.domain ?? null,
        scanner: input.scanner ?? false,
        profileUrl: input.profile_url ?? null,
        createdAt: now,
        updatedAt: now,
      })
      .returning(columns),
  );
  if (input.kind === "employer") {
    const companyId = sql`(select ${companies.id} from ${companies} where ${companies.slug} = ${input.slug})`;
    // The company's id is only known inside the batch: the roles name it by its slug.
    const rows = defaultRoleRows(0).map((role) => ({ ...role, companyId: companyId as unknown as number }));
    for (const statement of insertChunks(db, roles, rows)) batch.add(statement);
  }
  // Another request may create the same slug between the check and the batch: the check, asked
  // again after a rollback, answers it (db/guard.ts).
  batch.explainRollback(async () => {
    if (await db.select({ id: companies.id }).from(companies).where(eq(companies.slug, input.slug)).get()) {
      throw slugTaken(input.slug);
    }
  });
  const { results } = await batch.commit();
  return toPlatformCompany((results[insert] as Row[])[0]!);
}

async function findCompany(db: Db, companyId: number) {
  const row = await db.select(columns).from(companies).where(eq(companies.id, companyId)).get();
  if (!row) throw notFound(`company ${companyId} does not exist`);
  return row;
}

/** Fields only one kind has (the same rule as on create). */
const OWNER_OF: Partial<Record<keyof CompanyChanges, CompanyKind>> = { domain: "publisher", scanner: "site" };

/** PATCH /internal/companies/{id}: only the fields given change. */
export async function updateCompany(deps: Deps, companyId: number, changes: CompanyChanges) {
  const { db } = deps;
  const current = await findCompany(db, companyId);
  for (const [field, owner] of Object.entries(OWNER_OF)) {
    if (changes[field as keyof CompanyChanges] !== undefined && current.kind !== owner) {
      throw badRequest(
        `\`${field}\` is only for companies of kind \`${owner}\`; company ${companyId} is of kind \`${current.kind}\``,
      );
    }
  }
  const batch = new WriteBatch(deps);
  const update = batch.add(
    db
      .update(companies)
      // Every field of CompanyChanges is the column of the same name.
      .set({ ...definedOnly(changes), updatedAt: batch.now })
      .where(eq(companies.id, companyId))
      .returning(columns),
  );
  // Trust-lookup reads no company detail, but a disabled company's phones count for nobody:
  // their caller records are rewritten when the status changes (docs/decisions.md).
  if (changes.status !== undefined) batch.markStalePhonesOfCompany(companyId);
  // Its members' heartbeats (`last_company_update`).
  batch.markStaleCompany(companyId);
  const { results } = await batch.commit();
  const [row] = results[update] as Row[];
  if (!row) throw notFound(`company ${companyId} does not exist`);
  return toPlatformCompany(row);
}

const definedOnly = <T extends object>(changes: T): Partial<T> =>
  Object.fromEntries(Object.entries(changes).filter(([, value]) => value !== undefined)) as Partial<T>;

export type NewMember = { firstName: string; lastName: string; email: string; roles: string[] };

/**
 * POST /internal/companies/{id}/members: seats a person in an employer with
 * roles (its first Admin). A person already holding the email is linked
 * (their names stay theirs); otherwise a person is created with that email
 * as a company-managed address, as `POST /employees` does. Already a member
 * → 409. Consequences: the person's receiver record (their companies feed
 * trust-lookup) and `person:created` for the company's webhooks.
 */
export async function addMember(deps: Deps, companyId: number, input: NewMember): Promise<{ person_id: number }> {
  const { db } = deps;
  const company = await findCompany(db, companyId);
  if (company.kind !== "employer") {
    throw badRequest(`company ${companyId} is a ${company.kind}; only employers have members`);
  }
  const roleIds = await resolveRoleNames(deps, companyId, input.roles);
  const existing = await db
    .select({ personId: personEmails.personId })
    .from(personEmails)
    .where(eq(personEmails.email, input.email))
    .get();
  if (existing) {
    const member = await db
      .select({ id: memberships.id })
      .from(memberships)
      .where(and(eq(memberships.companyId, companyId), eq(memberships.personId, existing.personId)))
      .get();
    if (member) throw alreadyMember(existing.personId, companyId);
  }

  const batch = new WriteBatch(deps);
  const { now } = batch;
  // A new person's id is only known inside the batch: it is found by the email inserted with it.
  const personId =
    existing?.personId ??
    sql`(select ${personEmails.personId} from ${personEmails} where ${personEmails.email} = ${input.email})`;
  let inserted: number | null = null;
  if (!existing) {
    inserted = batch.add(
      db
        .insert(people)
        .values({
          firstName: input.firstName,
          lastName: input.lastName,
          enteredBy: companyId,
          createdAt: now,
          updatedAt: now,
        })
        .returning({ id: people.id }),
    );
    batch.add(
      db.insert(personEmails).values({
        personId: sql`last_insert_rowid()`,
        email: input.email,
        primary: true,
        employerCompanyId: companyId,
      }),
    );
  }
  batch.add(db.insert(memberships).values({ companyId, personId, createdAt: now, updatedAt: now }));
  batch.add(touchRosters(db, { personIds: personId, companyId, at: now }));
  batch.markStaleCompany(companyId);
  const membershipId = sql`(select ${memberships.id} from ${memberships} where ${memberships.companyId} = ${companyId} and ${memberships.personId} = ${personId})`;
  for (const roleId of roleIds) batch.add(db.insert(membershipRoles).values({ membershipId, roleId }));
  batch.markStalePerson(personId);
  batch.emitPerson("person:created", companyId, personId);

  // A concurrent request may take the email or seat the person first (a UNIQUE constraint fails): the
  // checks before the batch, asked again after a rollback in the order of the batch's statements,
  // answer it (db/guard.ts).
  const holder = () =>
    db.select({ personId: personEmails.personId }).from(personEmails).where(eq(personEmails.email, input.email)).get();
  if (!existing) {
    batch.explainRollback(async () => {
      if (await holder()) {
        throw conflict(`the email ${input.email} was just taken by another person; nothing was changed, try again`);
      }
    });
  }
  batch.explainRollback(async () => {
    const held = await holder();
    const member =
      held &&
      (await db
        .select({ id: memberships.id })
        .from(memberships)
        .where(and(eq(memberships.companyId, companyId), eq(memberships.personId, held.personId)))
        .get());
    if (member) throw alreadyMember(existing?.personId ?? null, companyId);
  });
  const committed = await batch.commit();
  if (existing) await forgetBeforeReturn(deps, companyId, existing.personId);
  const id = existing?.personId ?? (committed.results[inserted!] as { id: number }[])[0]!.id;
  const person = await loadPerson(deps, companyId, id);
  if (person) await renderPersonDeliveries(deps, committed.deliveries, [person]);
  return { person_id: id };
}

const alreadyMember = (personId: number | null, companyId: number) =>
  conflict(`${personId === null ? "this person" : `person ${personId}`} is already a member of company ${companyId}`);

/** Role names of the company, case-insensitively → role ids; a role it lacks is a 400. */
async function resolveRoleNames({ db }: Deps, companyId: number, names: string[]): Promise<number[]> {
  const available = await companyRoles(db, companyId);
  return [...new Set(names.map((name) => roleNamed(available, companyId, name).id))];
}

/** `vendors` omitted: the container keeps the ones it lists. */
export type ContainerConfig = { enabled: boolean; vendors?: { slug: string; category: string }[] };

/**
 * PUT /internal/containers/{publisher_slug}: creates or replaces the
 * publisher's container (its vendors in display order). Answers the
 * container as an anonymous visitor sees it, plus `enabled`; the next
 * `load_container` shows the change. Vendor trust settings are people's
 * trust in the vendor companies, so they survive a reconfiguration.
 */
export async function configureContainer(deps: Deps, publisherSlug: string, config: ContainerConfig) {
  const { db } = deps;
  const publisher = await db
    .select(columns)
    .from(companies)
    .where(and(eq(companies.slug, publisherSlug), eq(companies.kind, "publisher")))
    .get();
  if (!publisher) throw notFound(`there is no publisher ${JSON.stringify(publisherSlug)}`);
  const slugs = (config.vendors ?? []).map((vendor) => vendor.slug);
  const found =
    slugs.length === 0
      ? []
      : await db
          .select({ id: companies.id, slug: companies.slug })
          .from(companies)
          .where(and(inList(companies.slug, slugs), eq(companies.kind, "vendor")))
          .all();
  const idOf = new Map(found.map((row) => [row.slug, row.id]));
  const unknown = slugs.filter((slug) => !idOf.has(slug));
  if (unknown.length > 0) {
    throw badRequest(
      `invalid body: \`vendors\`: there is no vendor ${unknown.map((slug) => JSON.stringify(slug)).join(", ")}; create ${unknown.length > 1 ? "them" : "it"} first with kind \`vendor\``,
    );
  }

  const batch = new WriteBatch(deps);
  const container = batch.add(
    db
      .insert(consentContainers)
      .values({ publisherId: publisher.id, enabled: config.enabled, createdAt: batch.now })
      .onConflictDoUpdate({ target: consentContainers.publisherId, set: { enabled: config.enabled } })
      .returning({ id: consentContainers.id }),
  );
  const containerId = sql`(select ${consentContainers.id} from ${consentContainers} where ${consentContainers.publisherId} = ${publisher.id})`;
  if (config.vendors !== undefined) {
    batch.add(db.delete(containerVendors).where(eq(containerVendors.containerId, containerId)));
    const rows = config.vendors.map((vendor, i) => ({
      containerId: containerId as unknown as number,
      vendorId: idOf.get(vendor.slug)!,
      position: i + 1,
      category: vendor.category,
    }));
    for (const statement of insertChunks(db, containerVendors, rows)) batch.add(statement);
  }
  // Which vendors a container lists is not a trust-lookup input: no index work.
  const { results } = await batch.commit();
  const [{ id }] = results[container] as { id: number }[] as [{ id: number }];
  return {
    is_authenticated: false,
    company: {
      slug: publisher.slug,
      name: publisher.name,
      domain: publisher.domain ?? "",
      logo: publisher.logo ?? "",
    },
    vendors: await containerVendorsFor(deps, id, null),
    enabled: config.enabled,
  };
}
