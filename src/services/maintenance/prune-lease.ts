import type { Db } from '../../store/store.ts';

const LEASE = 'retention.lease';

/**
 * The right to run the background retention pass, held by one node of a cluster at a time: a `settings` row
 * naming its holder and when it last renewed it. A holder that stopped renewing (a crashed node) loses it
 * after `ttlMs`. Taking and renewing are the same conditional update, so two nodes cannot both hold it.
 */
export class PruneLease {
  readonly #db: Db;
  readonly #owner: string;
  readonly #ttlMs: number;

  constructor(db: Db, owner: string, ttlMs: number) {
    this.#db = db;
    this.#owner = owner;
    this.#ttlMs = ttlMs;
  }

  /** Takes the lease, or renews it when held already; false when another node holds it. */
  async take(now = Date.now()): Promise<boolean> {
    await this.#db
      .insertInto('settings')
      .values({ name: LEASE, value: '', updated_at: 0 })
      .onConflict((oc) => oc.column('name').doNothing())
      .execute();
    const taken = await this.#db
      .updateTable('settings')
      .set({ value: this.#owner, updated_at: now })
      .where('name', '=', LEASE)
      .where((eb) => eb.or([eb('value', '=', this.#owner), eb('updated_at', '<', now - this.#ttlMs)]))
      .executeTakeFirst();
    return Number(taken.numUpdatedRows) === 1;
  }

  /** Gives the lease up at once (the next node need not wait for it to expire). */
  async release(): Promise<void> {
    await this.#db
      .updateTable('settings')
      .set({ value: '', updated_at: 0 })
      .where('name', '=', LEASE)
      .where('value', '=', this.#owner)
      .execute();
  }
}
