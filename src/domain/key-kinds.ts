/*
 * The registry of the trust index's key kinds (docs/architecture.md, "The
 * trust index"): every key in KV `TRUST_INDEX`, and every `index_work` row,
 * is `<prefix><id>` of one kind listed here, with its builder, its parser,
 * the SQL that builds it from a column (for the statements and triggers that
 * mark keys stale) and who makes it current. Nothing else spells a prefix:
 * the appliers, the rebuild, the objects and the lookups loop over or name
 * these kinds, and test/index/trust-index-registry.test.ts checks the prefixes the
 * D1 triggers (drizzle/*.sql) spell against this list.
 *
 * How each kind's value is computed lives beside its writer: D1's kinds in
 * services/trust-index/kinds.ts (typed by `D1_KINDS`, so a kind without a
 * computation does not compile), the objects' in objects/person/index-keys.ts.
 * This half is in domain/ because the objects import it too.
 *
 * One vocabulary for one act: a change **marks keys stale** (an `index_work`
 * row in D1's batch, a due `index_keys` row in an object's transaction), and
 * their writer **makes them current** (reads the value, writes it through
 * db/kv-writes.ts), at most once a second per key, retried with one backoff.
 */

/** Who makes a kind current. */
export type Writer =
  /** D1's index work: computed from D1 after a commit (services/trust-index/). */
  | "d1"
  /** The person's object, from its own storage (objects/person/index-keys.ts). */
  | "object"
  /** No KV key: an `index_work` row that tells a person's object D1's facts about them. */
  | "tell"
  /** The rebuild's own progress and marks (services/index-rebuild.ts). */
  | "rebuild"
  /** A push registration itself (services/push/directory.ts): who last registered a push address. */
  | "push";

type Kind<Id, W extends Writer> = {
  readonly prefix: string;
  readonly writer: W;
  /** The key of `id`. */
  key(id: Id): string;
  /** The id of one of this kind's keys (`kindOf(key)` says which kind a key is). */
  parse(key: string): Id;
  /** SQL building this kind's key from the SQL expression `expr` (a column, `NEW.x`). */
  sql(expr: string): string;
};

function kind<Id, W extends Writer>(
  prefix: string,
  writer: W,
  format: (id: Id) => string,
  parse: (rest: string) => Id,
): Kind<Id, W> {
  return {
    prefix,
    writer,
    key: (id) => `${prefix}${format(id)}`,
    parse: (key) => parse(key.slice(prefix.length)),
    sql: (expr) => `'${prefix}' || ${expr}`,
  };
}

const text = (value: string) => value;
const id = (value: number) => String(value);

/** The bucket of a contact phone in a receiver's record: its last two digits, 00–99. */
export type Bucket = { e164: string; bucket: number };

export const KEY_KINDS = {
  /** Who calls from a number: the people holding it (a confirmed phone, a secure number), its companies. */
  num: kind<string, "d1">("num:", "d1", text, text),
  /** A receiver (the holder of a secure number) and their trust inputs. */
  rcv: kind<string, "object">("rcv:", "object", text, text),
  /** A receiver's contact phones ending in two digits (one bucket of 100). */
  rcvn: kind<Bucket, "object">(
    "rcvn:",
    "object",
    ({ e164, bucket }) => `${e164}:${String(bucket).padStart(2, "0")}`,
    (rest) => {
      const at = rest.lastIndexOf(":");
      return { e164: rest.slice(0, at), bucket: Number(rest.slice(at + 1)) };
    },
  ),
  /** The heartbeat's record of a company: its and its roster's times. */
  co: kind<number, "d1">("co:", "d1", id, Number),
  /** A token's verification record, by the SHA-256 of the token. */
  tok: kind<string, "d1">("tok:", "d1", text, text),
  /** Who owns an email (contacts link through it). */
  eml: kind<string, "d1">("eml:", "d1", text, text),
  /** What a contact's link shows of a person (avatar, risk score, e2ee, companies). */
  lnk: kind<number, "d1">("lnk:", "d1", id, Number),
  /** A person's object is told D1's facts about them (no KV key). */
  prs: kind<number, "tell">("prs:", "tell", id, Number),
  /** The rebuild's progress and the index's marks. */
  idx: kind<string, "rebuild">("idx:", "rebuild", text, text),
  /** Which device last registered a push address (an FCM or APNs token, a Web Push endpoint), by its SHA-256. */
  psh: kind<string, "push">("psh:", "push", text, text),
} as const;

export type KindName = keyof typeof KEY_KINDS;
/** The kinds D1's index work writes to KV. */
export type D1KindName = { [K in KindName]: (typeof KEY_KINDS)[K]["writer"] extends "d1" ? K : never }[KindName];
export const D1_KINDS = (Object.keys(KEY_KINDS) as KindName[]).filter(
  (name) => KEY_KINDS[name].writer === "d1",
) as D1KindName[];

/** The kind of a key (null: no kind of the index). Prefixes end in `:`, so none is another's prefix. */
export function kindOf(key: string): KindName | null {
  const prefix = key.slice(0, key.indexOf(":") + 1);
  for (const name of Object.keys(KEY_KINDS) as KindName[]) if (KEY_KINDS[name].prefix === prefix) return name;
  return null;
}

/**
 * How a log line names `keys`: their kinds and how many, never the keys themselves (a `num:` or `rcv:`
 * key is a phone number, an `eml:` key an email: docs/security.md, "Logging").
 */
export const loggedKeys = (keys: readonly string[]) => ({
  kinds: [...new Set(keys.map((key) => kindOf(key) ?? "unknown"))].join(","),
  keys: keys.length,
});

/** The keys of `keys` of kind `name`. */
export const keysOfKind = (keys: readonly string[], name: KindName) => keys.filter((key) => kindOf(key) === name);

/**
 * KV takes at most one write per second per key (a put or a delete): a key's writes are this far
 * apart, and the changes in between are coalesced into one write of the latest value. The one
 * constant of that rule, for D1's index work, the objects' keys and the background queue's delay.
 */
export const KEY_WRITE_GAP_MS = 1_000;

/**
 * The retry of a key (or an object's delivery) that did not land: 1 s, doubling, at most 60 s apart
 * (lib/backoff.ts's policy; the index work's rows take it in SQL, the objects' alarm and the KV
 * writer in code).
 */
export const KEY_RETRY = { base: KEY_WRITE_GAP_MS, cap: 60_000 } as const;
