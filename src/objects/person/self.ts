import type { DrizzleSqliteDODatabase } from "drizzle-orm/durable-sqlite";
import { migrate } from "drizzle-orm/durable-sqlite/migrator";
import migrations from "../../../drizzle-person/migrations.js";
import { createDb } from "../../db/client";
import { factsOf } from "../../db/facts";
import * as keys from "./index-keys";
import { personStub } from "./stub";
import type { Person } from "./person";
import { erasure } from "./schema";
import type { Sender } from "./senders";

/*
 * Who the object is: its person's id and whether it was erased. The id comes
 * from the object's name (`person:<id>`, stub.ts), which the runtime gives
 * the object as `ctx.id.name` when a stub reached it by `idFromName`. An
 * alarm that wakes a fresh instance has no name (workerd gives none then), so
 * the id is also kept in the object's key-value storage the first time it is
 * seen; an object older than that, woken so, falls back on its facts.
 */

/** The object's own key-value storage: its person's id, from its name. */
const OWN_ID = "person:id";

/** The person id of an object name `person:<id>`; null for any other (or no) name. */
export function idOfName(name: string | undefined): number | null {
  const match = /^person:(\d+)$/.exec(name ?? "");
  return match ? Number(match[1]) : null;
}

export class Self {
  /** When the object was erased (ms), null while its person exists; read from storage on start. */
  private erasedAt: number | null = null;

  constructor(
    private readonly ctx: DurableObjectState,
    private readonly env: Env,
    private readonly db: DrizzleSqliteDODatabase,
  ) {}

  /** On start, before any call: the object's tables migrated, the erasure mark read, the name's id kept. */
  async open() {
    await migrate(this.db, migrations);
    this.erasedAt = this.db.select().from(erasure).get()?.erasedAt ?? null;
    this.remember();
  }

  /** The erasure's last step (after the alarm went, scheduler.ts): every row goes; the empty tables come back at once, with the mark. */
  async wipe(): Promise<void> {
    const at = this.erasedAt ?? Date.now();
    await this.ctx.storage.deleteAll();
    await migrate(this.db, migrations);
    this.markErased(at);
  }

  /** Keeps the name's id in storage (once), for a wake that comes without the name. */
  remember() {
    const named = idOfName(this.ctx.id.name);
    if (named !== null && this.ctx.storage.kv.get(OWN_ID) !== named) this.ctx.storage.kv.put(OWN_ID, named);
  }

  /** This object's person, or null when nothing tells (a nameless wake of an object that never knew). */
  known(): number | null {
    return (
      idOfName(this.ctx.id.name) ?? this.ctx.storage.kv.get<number>(OWN_ID) ?? keys.readFacts(this.db)?.personId ?? null
    );
  }

  /** This object's person; every RPC call reaches it by name, so it is known there. */
  get id(): number {
    const id = this.known();
    if (id === null) throw new Error("this object does not know its person (it was not reached by its name)");
    return id;
  }

  /** Whether this object was erased (its person's account is gone): it then refuses every write. */
  get erased(): boolean {
    return this.erasedAt !== null;
  }

  /** Remembers, in storage and here, that the object was erased (and, after its storage went, who it is). */
  markErased(at = this.erasedAt ?? Date.now()) {
    this.erasedAt = at;
    this.db.insert(erasure).values({ one: 1, erasedAt: at }).onConflictDoNothing().run();
    this.remember();
  }

  /**
   * Before a change that touches the index keys: an object D1 has not told
   * its facts yet (its `prs:` work still queued, or an object older than
   * them) reads them from D1 itself, once, so the change's keys are written
   * now and its mirrors name their sender. Facts pushed meanwhile win.
   */
  async knowFacts(): Promise<void> {
    if (this.erased || keys.readFacts(this.db) !== null) return; // an erased object takes no facts (gate.ts)
    const [read] = await factsOf(createDb(this.env.DB), [this.id]);
    if (!this.erased && keys.readFacts(this.db) === null)
      this.ctx.storage.transactionSync(() => keys.takeFacts(this.db, read!));
  }

  /** The stub of another person's object (a chat, a mirror, a trust request on its way). */
  peer(personId: number): DurableObjectStub<Person> {
    return personStub(this.env.PERSON, personId);
  }

  /** This person as a chat's sender, for the receiver's budget (senders.ts). */
  asSender(): Sender {
    const facts = keys.readFacts(this.db);
    return { personId: this.id, companies: facts?.companies ?? [], e164: facts?.e164 ?? null };
  }
}
