import { retryWhileBusy, type SqliteConnection } from './sqlite-connection.ts';

/** A batch commits once it holds this many transactions or is this old, even while more are waiting to join it. */
const MAX_BATCH_TRANSACTIONS = 100;
const MAX_BATCH_MS = 10;

interface Batch {
  /** The transactions that ended in it (their savepoints released), waiting to hear whether it committed. */
  pending: { resolve: () => void; reject: (err: unknown) => void }[];
  openedAt: number;
  /** The error after which SQLite rolled the whole batch back by itself (SQLITE_FULL, SQLITE_IOERR…). */
  lostBy?: unknown;
}

/**
 * The writing connection, used by one transaction or autocommit statement at a time (its "turn"), with group
 * commit: most of a SQLite write transaction's cost is its commit (a WAL frame per page it touched, each
 * written on its own, and the checkpoints they add up to), and concurrent single-key writes touch mostly the
 * same pages. So transactions that run while one is open share it:
 *
 * - the first opens a real transaction (`BEGIN IMMEDIATE`); every transaction runs in a `SAVEPOINT` of it;
 * - a transaction that ends releases its savepoint and waits; one that fails rolls back to its savepoint
 *   only, so it undoes exactly its own writes and nobody else's;
 * - the batch commits (`COMMIT`) when no transaction is running or waiting, at the end of the event-loop
 *   turn (so requests that arrived in the same turn join it), or when it is full; only then are its
 *   transactions told they committed (nothing is acknowledged before it is durable as before);
 * - an autocommit write commits the batch first, so it never rides along in it.
 *
 * Only a failure of the commit itself (or an error after which SQLite rolls back the whole transaction:
 * disk full, I/O error) fails every transaction of the batch — each is told, none is acknowledged.
 * Reads outside transactions never see a batch before it commits: they run on another connection.
 */
export class GroupCommitWriter {
  readonly connection: SqliteConnection;
  readonly #busyTimeoutMs: number;
  #taken = false;
  readonly #waiting: (() => void)[] = [];
  #batch: Batch | undefined;
  #commitScheduled = false;

  constructor(connection: SqliteConnection, busyTimeoutMs: number) {
    this.connection = connection;
    this.#busyTimeoutMs = busyTimeoutMs;
  }

  /** Waits for the writer's turn (first come, first served). */
  takeTurn(): Promise<void> {
    if (!this.#taken) {
      this.#taken = true;
      return Promise.resolve();
    }
    return new Promise((resolve) => this.#waiting.push(resolve));
  }

  /** Ends the current turn: commits the batch when it is due and hands the writer to the next in line. */
  giveTurn(): void {
    const batch = this.#batch;
    if (
      batch &&
      (batch.lostBy !== undefined || batch.pending.length >= MAX_BATCH_TRANSACTIONS || Date.now() - batch.openedAt >= MAX_BATCH_MS)
    ) {
      this.commitBatch();
    }
    const next = this.#waiting.shift();
    if (next) {
      next();
      return;
    }
    this.#taken = false;
    if (this.#batch && !this.#commitScheduled) {
      this.#commitScheduled = true;
      setImmediate(() => {
        this.#commitScheduled = false;
        // A turn in progress commits it when it ends (giveTurn); a transaction is never committed half-way.
        if (!this.#taken) this.commitBatch();
      });
    }
  }

  /**
   * Runs `fn` holding the writer's turn, with no batch open: this connection holds no lock meanwhile, so another
   * connection to the file (the analytics writer thread) writes without contending for it, while this one's
   * transactions wait their turn as they would behind a transaction of their own (not on the event loop).
   */
  async aside<T>(fn: () => Promise<T>): Promise<T> {
    await this.takeTurn();
    try {
      this.commitBatch();
      return await fn();
    } finally {
      this.giveTurn();
    }
  }

  /** Starts a transaction (the turn is held): a savepoint in the open batch, or in a new one. */
  async begin(): Promise<void> {
    if (this.#batch && !this.connection.inTransaction) this.commitBatch(); // lost: tell its transactions
    if (!this.#batch) {
      await retryWhileBusy(() => this.connection.exec('begin immediate'), this.#busyTimeoutMs);
      this.#batch = { pending: [], openedAt: Date.now() };
    }
    this.connection.exec('savepoint kh_tx');
  }

  /** Refuses a statement of a transaction whose batch SQLite rolled back (it would run in autocommit mode). */
  checkInTransaction(): void {
    if (!this.connection.inTransaction) {
      throw new Error('SQLite rolled this transaction back after an error; its later statements are refused');
    }
  }

  /** Notes a statement's error inside a transaction: if SQLite rolled the whole batch back, its transactions fail with it. */
  failedInTransaction(err: unknown): void {
    if (this.#batch && !this.connection.inTransaction && this.#batch.lostBy === undefined) this.#batch.lostBy = err;
  }

  /**
   * Ends a transaction successfully (the turn is held, and given up here): resolves once its batch has
   * committed; rejects if that commit failed. Throws, keeping the turn, if the batch is already lost.
   */
  commit(): Promise<void> {
    if (!this.connection.inTransaction) throw this.#batch?.lostBy ?? new Error('SQLite rolled this transaction back');
    this.connection.exec('release kh_tx');
    const batch = this.#batch!;
    const committed = new Promise<void>((resolve, reject) => batch.pending.push({ resolve, reject }));
    this.giveTurn();
    return committed;
  }

  /** Undoes a transaction's own writes (the turn is held). */
  rollback(): void {
    // SQLite rolls back by itself on some errors (SQLITE_FULL, SQLITE_IOERR…): then there is nothing to undo.
    if (!this.connection.inTransaction) return;
    this.connection.exec('rollback to kh_tx');
    this.connection.exec('release kh_tx');
  }

  /** Commits the open batch now (before an autocommit statement, or when it is due) and tells its transactions. */
  commitBatch(): void {
    const batch = this.#batch;
    if (!batch) return;
    this.#batch = undefined;
    try {
      if (!this.connection.inTransaction) throw batch.lostBy ?? new Error('SQLite rolled this transaction back');
      this.connection.exec('commit');
    } catch (err) {
      try {
        if (this.connection.inTransaction) this.connection.exec('rollback');
      } finally {
        for (const p of batch.pending) p.reject(err);
      }
      return;
    }
    for (const p of batch.pending) p.resolve();
  }

  /**
   * On close: a batch no transaction is in the middle of commits; otherwise (closing under a running
   * transaction, which the close rolls back) the transactions waiting for it are told it did not commit.
   */
  close(): void {
    if (!this.#taken) this.commitBatch();
    const batch = this.#batch;
    this.#batch = undefined;
    for (const p of batch?.pending ?? []) p.reject(new Error('the store was closed before this transaction committed'));
  }
}
