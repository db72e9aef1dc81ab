import type { DrizzleSqliteDODatabase } from "drizzle-orm/durable-sqlite";
import { migrate } from "drizzle-orm/durable-sqlite/migrator";
import migrations from "../../../drizzle-person/migrations.js";
import { createDb } from "../../db/client";
import { factsOf } from "../../db/facts";
import * as keys from "./index-keys";
import { personStub, type PersonStub } from "./stub";
import { erasure } from "./schema";
import type { Sender } from "./api";
import type { Facts, PeerCard, Profile } from "../../domain/facts";

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
    await this.readFacts();
  }

  /**
   * The person's profile (names, companies with their roles) and secure
   * number, as `GET /me` shows them and their chats carry them: from the
   * facts D1 told (docs/architecture.md, "Names travel with facts"); facts
   * told without them (or never told) are read from D1 once. Null when the
   * object is erased or D1 knows no such person (no account).
   */
  async profile(): Promise<(Facts & { profile: Profile }) | null> {
    if (this.erased) return null;
    const held = keys.readFacts(this.db);
    if (complete(held)) return held;
    const read = await this.readFacts();
    return !this.erased && complete(read) ? read : null;
  }

  /** Reads D1's facts and takes them (an older version than what is held is ignored); answers what D1 said. */
  private async readFacts(): Promise<Facts> {
    const [read] = await factsOf(createDb(this.env.DB), [this.id]);
    if (!this.erased) this.ctx.storage.transactionSync(() => keys.takeFacts(this.db, read!));
    return read!;
  }

  /** What this object tells another about its person (a chat, a trust request); null while its profile is unknown. */
  card(): PeerCard | null {
    const facts = keys.readFacts(this.db);
    if (!facts?.profile) return null;
    const { first_name, middle_name, last_name } = facts.profile;
    return { id: this.id, first_name, middle_name, last_name, companies: facts.companies, version: facts.version };
  }

  /** The stub of another person's object (a chat, a mirror, a trust request on its way). */
  peer(personId: number): PersonStub {
    return personStub(this.env.PERSON, personId);
  }

  /** This person as a chat's sender, for the receiver's budget (senders.ts). */
  asSender(): Sender {
    const facts = keys.readFacts(this.db);
    return { personId: this.id, companies: facts?.companies ?? [], e164: facts?.e164 ?? null, card: this.card() };
  }
}

/** Facts that hold the profile and, with a number, its parts: enough for `GET /me` and a chat's names. */
const complete = (facts: Facts | null): facts is Facts & { profile: Profile } =>
  !!facts?.profile && (facts.e164 === null || (facts.countryCode != null && facts.number != null));
