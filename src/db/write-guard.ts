/**
 * A condition a write request's D1 work carries in its own round trips
 * instead of paying one of its own: the token check of a write whose token
 * was verified from the cache (services/tokens.ts, docs/security.md "Tokens").
 *
 * Armed, the guard's statement goes first into the request's next round trip
 * that can change data (every `batch`, and `run`/`all`/`first` of anything but
 * a `select`); D1 runs a batch as one transaction, so when the statement
 * fails nothing of that round trip is written (a batch of reads only runs unguarded). The first guarded round trip
 * that succeeds disarms it: the check happened before any change, as a
 * separate verification would have. A failed guarded round trip asks
 * `refusal` (one more D1 read, only on failure) whether the condition is what
 * failed; then that error is thrown, and again by every later round trip of
 * the request. Reads (`select`) run unguarded. `finish` checks a request that
 * never wrote, so its answer too is the refusal.
 */
export type WriteCondition = {
  /** A statement that fails (any SQLite error) when the condition does not hold. */
  statement: (database: D1Database | D1DatabaseSession) => D1PreparedStatement;
  /** After a guarded round trip failed: the error to answer when the condition does not hold, else null. */
  refusal: (database: D1Database | D1DatabaseSession) => Promise<Error | null>;
  /**
   * The condition was checked elsewhere already (a device's token, by its person's object): it rides
   * the request's D1 writes, and `finish` never runs it in a round trip of its own.
   */
  ridesOnly?: boolean;
};

/** A statement that only reads: it runs unguarded (nothing it does needs the condition). */
const READ_ONLY = /^\s*select\b/i;
const REAL = Symbol("the D1 statement");
const READS = Symbol("the statement only reads");

type Wrapped = D1PreparedStatement & { [REAL]: D1PreparedStatement; [READS]: boolean };

export class WriteGuard {
  #state: "idle" | "armed" | "passed" | "refused" = "idle";
  #guard: WriteCondition | null = null;
  #refusal: Error | null = null;
  #writes = 0;
  /** The database to hand to drizzle: `inner`, with the guard in its round trips while armed. */
  readonly database: D1Database;

  constructor(readonly inner: D1Database | D1DatabaseSession) {
    this.database = {
      prepare: (query: string) => this.#wrap(this.inner.prepare(query), query),
      batch: (statements: D1PreparedStatement[]) =>
        this.#batch(
          statements.map((statement) => (statement as Partial<Wrapped>)[REAL] ?? statement),
          statements.every((statement) => (statement as Partial<Wrapped>)[READS] === true),
        ),
    } as unknown as D1Database;
  }

  /**
   * How many of the request's round trips that could change data succeeded, with its writes made
   * elsewhere (`noteWrite`): whether the request wrote anything since a moment (middleware/idempotency.ts).
   */
  get writes(): number {
    return this.#writes;
  }

  /** The request wrote, or may have written, outside D1 (a person's object, a queue, KV). */
  noteWrite() {
    this.#writes++;
  }

  /** From now on the request's next writing round trip carries `guard` (a no-op once armed or settled). */
  arm(guard: WriteCondition) {
    if (this.#state !== "idle") return;
    this.#guard = guard;
    this.#state = "armed";
  }

  /**
   * A guard that has not run runs now (one round trip); a refusal is thrown.
   * At the end of the request, and before a write that goes elsewhere than
   * D1 (a person's object: `PersonObjects.write`), which the guard cannot ride.
   */
  async finish() {
    if (this.#state === "refused") throw this.#refusal!;
    if (this.#state === "armed" && !this.#guard!.ridesOnly) await this.#guarded([]);
  }

  async #batch(statements: D1PreparedStatement[], reads: boolean) {
    if (this.#state === "refused") throw this.#refusal!;
    const results =
      this.#state !== "armed" || reads ? await this.inner.batch(statements) : await this.#guarded(statements);
    if (!reads) this.#writes++;
    return results;
  }

  /** `statements` after the guard's statement, in one round trip; their results. */
  async #guarded<T>(statements: D1PreparedStatement[]): Promise<D1Result<T>[]> {
    const guard = this.#guard!;
    try {
      const [, ...results] = await this.inner.batch<T>([guard.statement(this.inner), ...statements]);
      if (this.#state === "armed") this.#state = "passed";
      return results;
    } catch (err) {
      if (this.#state === "refused") throw this.#refusal!;
      const refusal = await guard.refusal(this.inner);
      if (!refusal) {
        // The condition holds: the error is the statements' own.
        if (this.#state === "armed") this.#state = "passed";
        throw err;
      }
      this.#state = "refused";
      this.#refusal = refusal;
      throw refusal;
    }
  }

  #wrap(real: D1PreparedStatement, query: string): D1PreparedStatement {
    const wrapped = Object.create(real) as Wrapped;
    wrapped[REAL] = real;
    wrapped.bind = (...values: unknown[]) => this.#wrap(real.bind(...values), query);
    const reads = (wrapped[READS] = READ_ONLY.test(query));
    const single = async <R>(direct: () => Promise<R>, fromBatch: (result: D1Result) => R): Promise<R> => {
      if (this.#state === "refused") throw this.#refusal!;
      if (reads) return direct();
      const answer = this.#state !== "armed" ? await direct() : fromBatch((await this.#guarded([real]))[0]!);
      this.#writes++;
      return answer;
    };
    wrapped.run = (() =>
      single(
        () => real.run(),
        (result) => result,
      )) as D1PreparedStatement["run"];
    wrapped.all = (() =>
      single(
        () => real.all(),
        (result) => result,
      )) as D1PreparedStatement["all"];
    wrapped.first = ((column?: string) =>
      single<unknown>(
        () => (column === undefined ? real.first() : real.first(column)),
        (result) => {
          const row = result.results[0] as Record<string, unknown> | undefined;
          if (row === undefined) return null;
          return column === undefined ? row : (row[column] ?? null);
        },
      )) as D1PreparedStatement["first"];
    // A batch answers rows as objects: a writing `raw` (drizzle's `.returning().get()`) gets
    // its arrays back in column order, as drizzle maps its own batches' results (a RETURNING
    // list names one table's columns, so no name repeats).
    wrapped.raw = ((options?: { columnNames?: boolean }) =>
      single<unknown[]>(
        () => (options?.columnNames ? real.raw({ columnNames: true }) : real.raw()),
        (result) => {
          const rows = result.results as Record<string, unknown>[];
          const values = rows.map((row) => Object.values(row));
          return options?.columnNames ? [Object.keys(rows[0] ?? {}), ...values] : values;
        },
      )) as D1PreparedStatement["raw"];
    return wrapped;
  }
}
