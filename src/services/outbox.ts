import { sql, type SQL } from "drizzle-orm";
import type { BatchItem } from "drizzle-orm/batch";
import type { Db } from "../db/client";
import { GUARDS, type GuardCheck, type GuardStatement } from "../db/guard";
import { personErasures, webhookDeliveries } from "../db/schema";
import { batchableAll } from "../db/sql";
import { ApiError } from "../lib/errors";
import type { EventName } from "../domain/events";
import { enqueueDeliveries } from "./events";
import type { Deps } from "./deps";
import { eraseGonePersons } from "./person-erasures";
import { forgetInObjects, forgetStatement, type Forget } from "./company-forgets";
import * as stale from "./trust-index/stale";
import { makeCurrentAfterCommit } from "./trust-index/current";
import { KEY_KINDS } from "../domain/key-kinds";

/**
 * An event to record: for one company, or for every company a person belongs to whose scan side is
 * still in D1 (D1's scan and exposure events; a company whose scan side is in its object records
 * its own, docs/architecture.md, "The Company object").
 */
export type OutboxEvent = {
  event: EventName;
  payload: unknown;
  /**
   * When the change happened, when that was before this batch: an event a company's object raised, recorded
   * here later (the body's `timestamp`, docs/webhooks.md). Absent: the batch's time, the change being in it.
   */
  at?: Date;
} & ({ companyId: number } | { personId: number });

type Role = "change" | "deliveries" | "index" | "erase" | "forget";

/**
 * A command's write (docs/architecture.md, "Writes are commands"): the
 * change, the events it causes (history rows, the webhook outbox) and the
 * trust-index keys it makes stale (index work), all in ONE `db.batch`, which
 * D1 runs atomically. A committed change therefore always has its events
 * and its index work, and a failed one has neither. After the commit, the
 * index work is applied and the deliveries enqueued; both are retried by the
 * background queue and the sweeps if that fails.
 *
 * Order matters inside a batch: `emit(…, { ifChanged: true })` reads
 * SQLite's `changes()`, the row count of the statement added just before it,
 * so an event is recorded only when that statement changed something (a
 * repeated or concurrent request that changed nothing emits nothing).
 */
export class WriteBatch {
  readonly #items: { statement: BatchItem<"sqlite">; role: Role }[] = [];
  readonly #guards: GuardStatement[] = [];
  readonly #explanations: GuardCheck[] = [];
  /** Memberships the batch ends whose company's object may have to forget the person: one statement, last. */
  readonly #forgets: { companyId: number; personId: number }[] = [];

  constructor(
    readonly deps: Deps,
    readonly now = new Date(),
  ) {}

  /**
   * Adds a statement of the change, or a guard (db/guard.ts), whose check
   * explains the batch's rollback; returns its position in `commit()`'s results.
   */
  add(item: BatchItem<"sqlite"> | GuardStatement): number {
    if (!("check" in item)) return this.#items.push({ statement: item, role: "change" }) - 1;
    this.#guards.push(item);
    return this.#items.push({ statement: item.statement, role: "change" }) - 1;
  }

  /**
   * A check that explains a rollback no guard names, such as a UNIQUE
   * constraint another request's commit now holds (an email just taken):
   * asked after the guards' checks, the same way (db/guard.ts).
   */
  explainRollback(check: GuardCheck) {
    this.#explanations.push(check);
  }

  get size() {
    return this.#items.length;
  }

  /**
   * The person's own Durable Object is erased when the statement added just
   * before this one (the delete of their account) removed a row: recorded in
   * `person_erasures` in this batch, erased right after the commit, and by
   * the `erase-persons` sweep if that fails (services/person-erasures.ts).
   */
  eraseObjectIfDeleted(personId: number) {
    const statement = batchableAll<{ personId: number }>(
      this.deps.db,
      sql`insert into ${personErasures} (person_id, due_at) select ${personId}, ${this.now.getTime()}
          where changes() > 0 on conflict (person_id) do nothing returning person_id as personId`,
    );
    this.#items.push({ statement, role: "erase" });
  }

  /**
   * The company's object forgets the person's scan side when the membership is gone at the end of
   * the batch and the company's scan side lives in its object: recorded in `company_forgets` by
   * the batch's last statement (one for all its removals), told right after the commit, and by the minute sweep if that
   * fails (services/company-forgets.ts).
   */
  forgetInCompanyObject(companyId: number, personId: number) {
    this.#forgets.push({ companyId, personId });
  }

  /**
   * Records events: one `pending` history row per active webhook subscribed
   * to each event (of the company, or of every company the person belongs
   * to whose scan side is in D1), in one INSERT … SELECT whatever the number of events.
   */
  emit(
    events: OutboxEvent[],
    {
      ifChanged = false,
      setId,
      when,
    }: { ifChanged?: boolean; setId?: SQL; when?: (payload: SQL, index: SQL) => SQL } = {},
  ) {
    if (events.length === 0) return;
    const items = events.map((item) => ({
      e: item.event,
      c: "companyId" in item ? item.companyId : null,
      p: "personId" in item ? item.personId : null,
      d: JSON.stringify(item.payload),
      t: item.at?.getTime() ?? null,
    }));
    this.#push(
      deliveryInsert(this.deps.db, sql`from json_each(${JSON.stringify(items)}) e`, {
        event: sql`json_extract(e.value, '$.e')`,
        companyId: sql`json_extract(e.value, '$.c')`,
        personId: sql`json_extract(e.value, '$.p')`,
        // `setId`: the payload's `id` is a row inserted earlier in the batch.
        payload: setId
          ? sql`json_set(json_extract(e.value, '$.d'), '$.id', ${setId})`
          : sql`json_extract(e.value, '$.d')`,
        rendered: sql`1`,
        happenedAt: sql`json_extract(e.value, '$.t')`,
        ifChanged,
        // `when`: a condition per event on its payload or its index in `events` (recorded only where it holds at
        // this point of the batch).
        when: when?.(sql`json_extract(e.value, '$.d')`, sql`e.key`),
        now: this.now,
      }),
    );
  }

  /**
   * Records an event whose data is a Person (`person:created`,
   * `person:updated`): the row holds `{"id": n}` until the Person is
   * rendered, right after the commit by the command
   * (`renderPersonDeliveries` in services/events.ts) or, failing that, by the
   * delivery itself. `person` may be SQL (the id of
   * a person inserted earlier in the batch).
   */
  emitPerson(event: EventName, companyId: number, person: number | SQL) {
    this.emitPeople(event, companyId, sql`select ${person} as id`);
  }

  /**
   * `emitPerson` for many people in one statement, whatever their number
   * (a bulk create): `personIds` is a SELECT of one column `id`, evaluated at
   * this point of the batch; the rows are written in id order.
   */
  emitPeople(event: EventName, companyId: number, personIds: SQL) {
    this.#push(
      deliveryInsert(this.deps.db, sql`from (select id as key from (${personIds})) e`, {
        event: sql`${event}`,
        companyId: sql`${companyId}`,
        personId: sql`null`,
        payload: sql`json_object('id', e.key)`,
        rendered: sql`0`,
        ifChanged: false,
        now: this.now,
      }),
    );
  }

  /*
   * Marking keys stale (docs/architecture.md, "Index work"; the kinds: domain/key-kinds.ts): each
   * records, in this batch, keys the change makes stale; `commit` makes them current after the commit.
   */

  /**
   * D1's facts about the person changed (their secure number, or a company
   * they belong to): their object is told after the commit, and rewrites
   * their receiver keys (docs/architecture.md, "The trust index").
   */
  markStalePerson(personId: number | SQL) {
    // Its `prs:` row also raises the person's facts version (a trigger, drizzle/0025): an object told
    // older facts later (a lagging replica) ignores them.
    this.#index(stale.markStalePerson(this.deps.db, personId, this.now));
  }

  /**
   * The person's own record or a membership's times changed: their object is
   * told again, if they hold a secure number (the heartbeat reads the times
   * there; without a number it reads D1). D1 triggers queue the same work
   * (drizzle/0026); recording it here applies it right after the commit.
   */
  markStalePersonIfNumbered(personId: number) {
    this.#index(stale.markStalePersonIfNumbered(this.deps.db, personId, this.now));
  }

  /** The heartbeat's record of the company (its row or its roster changed; domain/company-records.ts). */
  markStaleCompany(companyId: number) {
    this.#index(stale.markStaleCompany(this.deps.db, companyId, this.now));
  }

  /** The heartbeat's records of every company the person belongs to at this point of the batch (their roster moved). */
  markStaleCompaniesOf(personId: number | SQL) {
    this.#index(stale.markStaleCompaniesOf(this.deps.db, personId, this.now));
  }

  /** The owner records of every email the person holds at this point of the batch (`eml:`, contacts link through them). */
  markStaleEmailsOf(personId: number | SQL) {
    this.#index(stale.markStaleEmailsOf(this.deps.db, personId, this.now));
  }

  /** What a contact's link shows of the person (`lnk:`; D1's triggers queue it too, drizzle/0030). */
  markStaleLinkCard(personId: number) {
    this.#index(stale.markStaleLinkCard(this.deps.db, personId, this.now));
  }

  /** The trust-lookup records of these caller numbers (who holds them). */
  markStaleNumbers(e164s: string[]) {
    if (e164s.length > 0) this.#index(stale.markStaleNumbers(this.deps.db, e164s, this.now));
  }

  /** The caller records of every number the person holds at this point of the batch. */
  markStaleNumbersOf(personId: number | SQL) {
    this.#index(stale.markStaleNumbersOf(this.deps.db, personId, this.now));
  }

  /** The caller records of every phone of the company (its status changed). */
  markStalePhonesOfCompany(companyId: number) {
    this.#index(stale.markStaleNumbersOfCompany(this.deps.db, companyId, this.now));
  }

  /** The verification records of these tokens (by SHA-256): a command that revokes them. */
  markStaleTokens(hashes: string[]) {
    if (hashes.length > 0) this.#index(stale.markStale(this.deps.db, hashes.map(KEY_KINDS.tok.key), this.now));
  }

  /** The verification records of the person's tokens, when `condition` holds here (their account goes). */
  markStaleTokensOf(personId: number, condition: SQL) {
    this.#index(stale.markStaleTokensOf(this.deps.db, personId, condition, this.now));
  }

  /** The verification records of the tokens D1 holds where `condition` holds here (none for an unknown hash). */
  markStaleTokensWhere(condition: SQL) {
    this.#index(stale.markStaleTokensWhere(this.deps.db, condition, this.now));
  }

  /**
   * What a rolled-back batch answers (db/guard.ts): the refusal of the
   * first check that refuses now — its guards' in the order of `GUARDS`,
   * then `explainRollback`'s — else the batch's own error. A check that
   * cannot be asked (D1 still failing) leaves the batch's error as it is, and
   * an error that is a refusal already (the write guard's) is answered as it is.
   */
  async #refusalFor(err: unknown): Promise<unknown> {
    // Already a refusal (the request's write guard refused its token, db/write-guard.ts): it stands.
    if (err instanceof ApiError) return err;
    const guards = [...this.#guards].sort((a, b) => GUARDS.indexOf(a.guard) - GUARDS.indexOf(b.guard));
    for (const check of [...guards.map((guard) => guard.check), ...this.#explanations]) {
      try {
        await check();
      } catch (refusal) {
        return refusal instanceof ApiError ? refusal : err;
      }
    }
    return err;
  }

  #index(statement: BatchItem<"sqlite">) {
    this.#items.push({ statement, role: "index" });
  }

  #push(statement: BatchItem<"sqlite">) {
    this.#items.push({ statement, role: "deliveries" });
  }

  /**
   * Runs the batch; then applies its index work and enqueues its deliveries.
   * Returns every statement's result (by the positions `add` returned) and
   * the ids of the deliveries written. `committed` runs as soon as the batch
   * committed, beside the index work (a revocation's object is told at once,
   * while a token's record may wait out its second).
   */
  async commit({ committed }: { committed?: () => Promise<unknown> } = {}): Promise<Committed> {
    if (this.#items.length === 0) return { results: [], deliveries: [] };
    if (this.#forgets.length > 0) {
      this.#items.push({ statement: forgetStatement(this.deps.db, this.#forgets.splice(0)), role: "forget" });
    }
    const [first, ...rest] = this.#items.map((item) => item.statement);
    let results: unknown[];
    try {
      results = (await this.deps.db.batch([first!, ...rest])) as unknown[];
    } catch (err) {
      throw await this.#refusalFor(err);
    }
    const rows = (role: Role) =>
      this.#items.flatMap((item, i) => (item.role === role ? (results[i] as Record<string, string>[]) : []));
    const deliveries = rows("deliveries").map((row) => row.id!);
    const keys = [...new Set(rows("index").map((row) => row.key!))];
    await Promise.all([makeCurrentAfterCommit(this.deps, keys), committed?.()]);
    await enqueueDeliveries(this.deps, deliveries);
    const erased = this.#items.flatMap((item, i) =>
      item.role === "erase" ? (results[i] as { personId: number }[]) : [],
    );
    if (erased.length > 0)
      await eraseGonePersons(
        this.deps,
        erased.map((row) => row.personId),
      );
    const forgets = this.#items.flatMap((item, i) => (item.role === "forget" ? (results[i] as Forget[]) : []));
    if (forgets.length > 0) await forgetInObjects(this.deps, forgets, this.now);
    return { results, deliveries };
  }
}

export type Committed = { results: unknown[]; deliveries: string[] };

/** A random RFC 4122 version 4 uuid, made by SQLite: the delivery's `webhook-id`. */
const UUID_V4 = sql`lower(hex(randomblob(4)) || '-' || hex(randomblob(2)) || '-4' || substr(hex(randomblob(2)), 2)
  || '-' || substr('89ab', 1 + abs(random()) % 4, 1) || substr(hex(randomblob(2)), 2) || '-' || hex(randomblob(6)))`;

function deliveryInsert(
  db: Db,
  source: SQL,
  f: {
    event: SQL;
    companyId: SQL;
    personId: SQL;
    payload: SQL;
    rendered: SQL;
    /** When the event happened (ms), when before `now`; null or absent: `now`. */
    happenedAt?: SQL;
    ifChanged: boolean;
    when?: SQL | undefined;
    now: Date;
  },
) {
  const t = f.now.getTime();
  return batchableAll<{ id: string }>(
    db,
    sql`
    insert into ${webhookDeliveries} (id, company_id, webhook_id, event, payload, rendered, created_at, updated_at, due_at)
    select ${UUID_V4}, w.company_id, w.id, w.event, ${f.payload}, ${f.rendered}, coalesce(${f.happenedAt ?? sql`null`}, ${t}), ${t}, ${t}
    ${source}
    join webhooks w on w.event = ${f.event} and w.active = 1
      and (w.company_id = ${f.companyId}
           or w.company_id in (select m.company_id from memberships m join companies c on c.id = m.company_id
                               where m.person_id = ${f.personId} and c.scans_in_object = 0))
    where ${f.ifChanged ? sql`changes() > 0` : sql`1`} and ${f.when ?? sql`1`}
    order by e.key, w.company_id, w.id
    returning id`,
  );
}
