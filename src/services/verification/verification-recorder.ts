import { sql, type Kysely } from 'kysely';
import type { Database, KeyVerificationHourlyRow } from '../../store/schema.ts';
import { IN_LIST_CHUNK } from '../../store/store.ts';
import { fixedShapeChunks } from '../../store/bulk-statements.ts';
import { VERIFY_CODES, type VerifyCode } from '../../domain/verify-codes.ts';
import { BufferedRecorder, type RecorderOptions } from '../analytics/buffered-recorder.ts';

export type { RecorderOptions };

/** One verification of a known key, as the verification path reports it. */
export interface VerificationEvent {
  keyId: string;
  workspaceId: string;
  apiId: string;
  identityId: string | null;
  code: VerifyCode;
  time: number;
}

export const HOUR_MS = 3_600_000;

/**
 * Counters (key, hour, outcome) held at most by default: every key of a full default key cache verified in one
 * hour, the keys a store outage leaves verifiable. About 25 MB (docs/reliability.md, "When the store or Redis fails").
 */
export const VERIFICATION_CAPACITY = 100_000;

/**
 * The outcomes stored in `key_verifications_hourly.outcome`. NOT_FOUND is not among them: such a
 * verification has no key to count it against. A buffered (key, hour) keeps one count per code, at the
 * code's index here.
 */
export const RECORDED_CODES = VERIFY_CODES.filter((c): c is Exclude<VerifyCode, 'NOT_FOUND'> => c !== 'NOT_FOUND');
export type RecordedCode = (typeof RECORDED_CODES)[number];

const CODE_INDEX: Readonly<Record<VerifyCode, number>> = {
  VALID: 0,
  FORBIDDEN: 1,
  USAGE_EXCEEDED: 2,
  RATE_LIMITED: 3,
  DISABLED: 4,
  INSUFFICIENT_PERMISSIONS: 5,
  EXPIRED: 6,
  NOT_FOUND: -1,
};

/**
 * What is buffered for one key: its counts per hour (one slot per recorded code) and its latest verification
 * time. The first hour is inline and later ones in `more`: most keys see one hour between two flushes, and this
 * halves the memory a buffered key takes (about 200 bytes), which is what bounds an outage's buffer.
 */
interface KeyBuffer {
  workspaceId: string;
  apiId: string;
  identityId: string | null;
  latest: number;
  hour: number;
  counts: number[];
  more?: Map<number, number[]>;
}

const noCounts = (): number[] => [0, 0, 0, 0, 0, 0, 0];
const countsAt = (k: KeyBuffer, hour: number): number[] | undefined => (k.hour === hour ? k.counts : k.more?.get(hour));
const addHour = (k: KeyBuffer, hour: number): number[] => {
  const counts = noCounts();
  if (k.more === undefined) k.more = new Map();
  k.more.set(hour, counts);
  return counts;
};
const hoursOf = (k: KeyBuffer): Array<[number, number[]]> => [[k.hour, k.counts], ...(k.more ?? [])];

/**
 * Counts verifications in memory and writes them to the store in batches (DESIGN "Hot path").
 *
 * `record` is synchronous and does no I/O: it bumps a counter per (key, hour, code) and remembers the
 * key's latest verification time. `flush` writes everything buffered in ONE transaction: each counter is
 * added to its `key_verifications_hourly` row (`count = count + excluded.count`), and every key's
 * `last_used_at` becomes the later of its stored value and the latest time seen (it never moves back).
 * A flush that fails rolls back as a whole and puts its counts back in the buffer, so the next flush
 * writes them: nothing is lost and nothing is counted twice (BufferedRecorder: the flush chain, timer
 * and restore-on-failure shared with the rate-limit recorder).
 *
 * Flushes run one at a time, in call order. Counts become visible to the analytics queries when flushed,
 * i.e. within `flushIntervalMs` once `start()` has been called.
 */
export class VerificationRecorder extends BufferedRecorder<Map<string, KeyBuffer>> {
  readonly #db: Kysely<Database>;

  constructor(db: Kysely<Database>, opts: RecorderOptions = {}) {
    super(() => new Map(), 'verification analytics', VERIFICATION_CAPACITY, opts);
    this.#db = db;
  }

  /**
   * Counts one verification. O(1), no I/O; allocates only for a (key, hour) not yet buffered. NOT_FOUND is
   * ignored. Beyond `capacity` counters, a verification that would add one is dropped (`dropped`); a key
   * already buffered still has its latest time kept.
   */
  record(e: VerificationEvent): void {
    const slot = CODE_INDEX[e.code];
    if (slot === undefined || slot < 0) return;
    let key = this.buffer.get(e.keyId);
    if (key !== undefined) {
      key.identityId = e.identityId;
      if (e.time > key.latest) key.latest = e.time;
    }
    const hour = e.time - (e.time % HOUR_MS);
    let counts = key === undefined ? undefined : countsAt(key, hour);
    if (counts !== undefined && counts[slot] > 0) {
      counts[slot]++;
      return;
    }
    if (!this.admit()) return;
    if (key === undefined) {
      counts = noCounts();
      key = { workspaceId: e.workspaceId, apiId: e.apiId, identityId: e.identityId, latest: e.time, hour, counts };
      this.buffer.set(e.keyId, key);
    } else counts ??= addHour(key, hour);
    counts[slot] = 1;
    this.counted();
  }

  /** In a transaction: on SQLite only the writer answers it, and only when no other process holds the write lock. */
  protected async probe(): Promise<void> {
    await this.#db.transaction().execute((tx) => sql`select 1`.execute(tx));
  }

  protected write(batch: Map<string, KeyBuffer>): Promise<void> {
    return writeBatch(this.#db, batch);
  }

  /** Puts the counts of a failed flush back, adding them to whatever was recorded meanwhile. */
  protected restore(batch: Map<string, KeyBuffer>): number {
    let added = 0;
    for (const [keyId, failed] of batch) {
      const current = this.buffer.get(keyId);
      if (current === undefined) {
        this.buffer.set(keyId, failed);
        for (const [, counts] of hoursOf(failed)) for (const n of counts) if (n > 0) added++;
        continue;
      }
      // `current` was recorded later, so its identity is the newer one.
      if (failed.latest > current.latest) current.latest = failed.latest;
      for (const [hour, counts] of hoursOf(failed)) {
        const into = countsAt(current, hour) ?? addHour(current, hour);
        for (let i = 0; i < counts.length; i++) {
          if (counts[i] === 0) continue;
          if (into[i] === 0) added++;
          into[i] += counts[i];
        }
      }
    }
    return added;
  }
}

/**
 * One transaction: upsert every counter, then move each key's last_used_at forward. Rows and keys are
 * written in a fixed order (key id, hour, code) so that two nodes flushing at once lock rows in the same
 * order instead of deadlocking.
 */
async function writeBatch(db: Kysely<Database>, batch: Map<string, KeyBuffer>): Promise<void> {
  const keyIds = [...batch.keys()].sort();
  const rows: KeyVerificationHourlyRow[] = [];
  for (const keyId of keyIds) {
    const key = batch.get(keyId)!;
    for (const [hour, counts] of hoursOf(key).sort((a, b) => a[0] - b[0])) {
      for (let i = 0; i < RECORDED_CODES.length; i++) {
        if (counts[i] === 0) continue;
        rows.push({
          key_id: keyId,
          hour,
          outcome: RECORDED_CODES[i],
          workspace_id: key.workspaceId,
          api_id: key.apiId,
          identity_id: key.identityId,
          count: counts[i],
        });
      }
    }
  }
  await db.transaction().execute(async (tx) => {
    for (const part of fixedShapeChunks(rows, IN_LIST_CHUNK)) {
      await tx
        .insertInto('key_verifications_hourly')
        .values(part)
        .onConflict((oc) =>
          oc
            .columns(['key_id', 'hour', 'outcome'])
            .doUpdateSet((eb) => ({ count: eb('key_verifications_hourly.count', '+', eb.ref('excluded.count')) })),
        )
        .execute();
    }
    for (const ids of fixedShapeChunks(keyIds, IN_LIST_CHUNK)) {
      // The CAST gives PostgreSQL the parameter's type (a bare parameter in CASE would be text).
      const latest = sql<number>`(case ${sql.ref('id')} ${sql.join(
        ids.map((id) => sql`when ${id} then cast(${batch.get(id)!.latest} as bigint)`),
        sql` `,
      )} end)`;
      await tx
        .updateTable('keys')
        .set({ last_used_at: latest })
        .where('id', 'in', ids)
        .where((eb) => eb.or([eb('last_used_at', 'is', null), eb('last_used_at', '<', latest)]))
        .execute();
    }
  });
}
