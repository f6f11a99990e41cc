import { sql, type Kysely } from 'kysely';
import type { Database, RatelimitHourlyRow } from '../../store/schema.ts';
import { IN_LIST_CHUNK } from '../../store/store.ts';
import { fixedShapeChunks } from '../../store/bulk-statements.ts';
import { BufferedRecorder, type RecorderOptions } from '../analytics/buffered-recorder.ts';
import { floorTo } from '../analytics/hourly-sums.ts';

/** One ratelimits.limit decision, as the limit path reports it. */
export interface RatelimitEvent {
  workspaceId: string;
  namespaceId: string;
  identifier: string;
  /** Whether the request was let through (`success: true`). */
  passed: boolean;
  time: number;
}

/** The counts of one (namespace, identifier, hour). */
interface HourCounts {
  passed: number;
  denied: number;
}

/** What is buffered for one namespace: per identifier, per hour (epoch ms of its start), the counts. */
interface NamespaceBuffer {
  workspaceId: string;
  identifiers: Map<string, Map<number, HourCounts>>;
}

type Buffer = Map<string, NamespaceBuffer>;

/**
 * Counters (namespace, identifier, hour) held at most by default: about 280 bytes each plus the identifier
 * (up to 255 characters), 16 to 28 MB (docs/reliability.md, "When the store or Redis fails").
 */
export const RATELIMIT_CAPACITY = 50_000;

/**
 * Counts ratelimits.limit decisions in memory and writes them to `ratelimit_hourly` in batches, as the
 * VerificationRecorder does verifications (BufferedRecorder: flush chain, timer, restore on failure).
 *
 * `record` is synchronous and does no I/O: it bumps the passed or denied count of (namespace, identifier,
 * hour). `flush` writes everything buffered in ONE transaction, adding each (namespace, identifier, hour)
 * to its row (`passed = passed + excluded.passed`, the same for denied). A flush that fails rolls back as a
 * whole and puts its counts back, so the next flush writes them: nothing is lost, nothing counted twice.
 * Flushes run one at a time, in call order; `buffered` counts distinct (namespace, identifier, hour) rows.
 */
export class RatelimitRecorder extends BufferedRecorder<Buffer> {
  readonly #db: Kysely<Database>;

  constructor(db: Kysely<Database>, opts: RecorderOptions = {}) {
    super(() => new Map(), 'rate-limit analytics', RATELIMIT_CAPACITY, opts);
    this.#db = db;
  }

  /**
   * Counts one decision. O(1), no I/O; allocates only for a (namespace, identifier, hour) not yet buffered.
   * Beyond `capacity` counters, a decision that would add one is dropped (`dropped`).
   */
  record(e: RatelimitEvent): void {
    const hour = floorTo(e.time, 'hour');
    let ns = this.buffer.get(e.namespaceId);
    let hours = ns?.identifiers.get(e.identifier);
    let counts = hours?.get(hour);
    if (counts === undefined) {
      if (!this.admit()) return;
      if (ns === undefined) {
        ns = { workspaceId: e.workspaceId, identifiers: new Map() };
        this.buffer.set(e.namespaceId, ns);
      }
      if (hours === undefined) {
        hours = new Map();
        ns.identifiers.set(e.identifier, hours);
      }
      counts = { passed: 0, denied: 0 };
      hours.set(hour, counts);
      this.counted();
    }
    if (e.passed) counts.passed++;
    else counts.denied++;
  }

  /** In a transaction: on SQLite only the writer answers it, and only when no other process holds the write lock. */
  protected async probe(): Promise<void> {
    await this.#db.transaction().execute((tx) => sql`select 1`.execute(tx));
  }

  protected write(batch: Buffer): Promise<void> {
    return writeBatch(this.#db, batch);
  }

  /** Puts the counts of a failed flush back, adding them to whatever was recorded meanwhile. */
  protected restore(batch: Buffer): number {
    let added = 0;
    for (const [namespaceId, failed] of batch) {
      const ns = this.buffer.get(namespaceId);
      if (ns === undefined) {
        this.buffer.set(namespaceId, failed);
        for (const hours of failed.identifiers.values()) added += hours.size;
        continue;
      }
      for (const [identifier, failedHours] of failed.identifiers) {
        const hours = ns.identifiers.get(identifier);
        if (hours === undefined) {
          ns.identifiers.set(identifier, failedHours);
          added += failedHours.size;
          continue;
        }
        for (const [hour, c] of failedHours) {
          const into = hours.get(hour);
          if (into === undefined) {
            hours.set(hour, c);
            added++;
          } else {
            into.passed += c.passed;
            into.denied += c.denied;
          }
        }
      }
    }
    return added;
  }
}

const byCodeUnits = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/**
 * One transaction of upserts. Rows are written in a fixed order (namespace id, identifier, hour; strings
 * by UTF-16 code units, not by any database collation) so that two nodes flushing at once lock rows in
 * the same order instead of deadlocking.
 */
async function writeBatch(db: Kysely<Database>, batch: Buffer): Promise<void> {
  const rows: RatelimitHourlyRow[] = [];
  for (const namespaceId of [...batch.keys()].sort(byCodeUnits)) {
    const ns = batch.get(namespaceId)!;
    for (const identifier of [...ns.identifiers.keys()].sort(byCodeUnits)) {
      const hours = ns.identifiers.get(identifier)!;
      for (const hour of [...hours.keys()].sort((a, b) => a - b)) {
        const c = hours.get(hour)!;
        rows.push({ namespace_id: namespaceId, identifier, hour, workspace_id: ns.workspaceId, passed: c.passed, denied: c.denied });
      }
    }
  }
  await db.transaction().execute(async (tx) => {
    for (const part of fixedShapeChunks(rows, IN_LIST_CHUNK)) {
      await tx
        .insertInto('ratelimit_hourly')
        .values(part)
        .onConflict((oc) =>
          oc.columns(['namespace_id', 'identifier', 'hour']).doUpdateSet((eb) => ({
            passed: eb('ratelimit_hourly.passed', '+', eb.ref('excluded.passed')),
            denied: eb('ratelimit_hourly.denied', '+', eb.ref('excluded.denied')),
          })),
        )
        .execute();
    }
  });
}
